// The optimizer interface: one update over one flat parameter buffer described by a ParamTable.
//
// An Optimizer owns its state (momentum buffers, moment estimates, accumulators, the step count) and
// applies one update per call to step(params, grads, lr). What every optimizer shares lives here:
//   - the per-tensor rules: weight decay is 0 on bias and batch-norm tensors when no_decay_bn_bias is
//     set (Goyal et al. 2017), else the configured weight_decay;
//   - gradient clipping by global norm and by value (clip.hpp), applied inside each fused pass;
//   - the non-finite check: before anything is written, step() reads the gradient once and throws
//     NonFiniteGradient if any element is NaN or Inf, so weights and state are left exactly as they
//     were (the trainer marks the run diverged, or skips the step under loss scaling). That read is a
//     separate cheap pass (4 bytes per parameter, an integer max over the bit patterns; or the sum of
//     squares when the global norm is needed for clipping, which is non-finite exactly when some
//     element is, since squares of finite floats cannot overflow a double);
//   - exact save/restore of the state to a byte vector;
//   - the work split: the buffer is cut into chunks of at most kChunkElements inside tensors; passes
//     run over chunks with an OpenMP parallel for (only above kParallelMinElements), and reductions
//     (norms) are summed per chunk and then in chunk order, so results do not depend on the number of
//     threads.
// Each optimizer (one file each) implements update(): one fused pass over each tensor (LAMB needs two:
// its trust ratio is the norm of the update itself).
//
// lr is the learning rate of this step, from the schedule (schedule.hpp); optimizers never hold one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"
#include "optim/clip.hpp"
#include "optim/param_table.hpp"
#include "optim/state_io.hpp"

namespace dtbench::optim {

// The keys shared by every optimizer ("/optimizer/...").
struct CommonOptions {
  double weight_decay = 0.0;     // >= 0
  bool no_decay_bn_bias = true;  // no weight decay on bias and bn tensors
  double clip_grad_norm = 0.0;   // >= 0, 0 = off
  double clip_grad_value = 0.0;  // >= 0, 0 = off
};

// Thrown by step() when a gradient element is NaN or Inf, before any weight or state is written.
class NonFiniteGradient : public RunFailed {
 public:
  NonFiniteGradient(const std::string& tensor, size_t index, float value, int64_t step);
  const std::string& tensor() const { return tensor_; }
  size_t index() const { return index_; }  // element within the tensor
  int64_t step() const { return step_; }   // 1-based number of the step that was refused
  // The message after "non-finite gradient at step N: ": "tensor[index] = value; the step was refused ...".
  const std::string& detail() const { return detail_; }

 private:
  NonFiniteGradient(std::string detail, const std::string& tensor, size_t index, int64_t step);
  std::string detail_;
  std::string tensor_;
  size_t index_;
  int64_t step_;
};

// The pieces both backends' optimizers share (the fused GPU optimizers in optim/gpu use them too), so the
// two give the same steps and the same reports.

// The weight decay of each tensor of `table`: 0 on bias and bn tensors with no_decay_bn_bias (Goyal et al.
// 2017), else common.weight_decay.
std::vector<double> weight_decay_table(const ParamTable& table, const CommonOptions& common);

// A range of the flat buffer inside one tensor: the unit of work of every pass.
struct Chunk {
  size_t tensor;  // index into the table
  size_t begin;   // flat element range [begin, end)
  size_t end;
};
// Every tensor cut into chunks of at most `chunk_elements`, in table order.
std::vector<Chunk> split_into_chunks(const ParamTable& table, size_t chunk_elements);

// The non-finite report: throws NonFiniteGradient for the first NaN or Inf gradient element in table order,
// refusing step number `step`. values(t) returns tensor t's gradient elements in host memory (a view of the
// buffer, or a copy from the device). Call it only once a check found a non-finite element.
[[noreturn]] void report_non_finite(const ParamTable& table, int64_t step,
                                    const std::function<std::span<const float>(const TensorInfo&)>& values);

// step()'s argument checks on both backends (std::invalid_argument; `who` names the caller): the buffers
// must have table.buffer_size() elements, the learning rate must be finite and >= 0.
void check_step_buffers(const ParamTable& table, size_t params, size_t grads, const std::string& who);
void check_learning_rate(double lr, const std::string& who);

class Optimizer {
 public:
  static constexpr size_t kChunkElements = 16384;          // 64 KiB of floats: fits L2 with its state
  static constexpr size_t kParallelMinElements = 1 << 17;  // below this a parallel region costs more

  Optimizer(std::string name, ParamTable table, CommonOptions common);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  const std::string& name() const { return name_; }
  const ParamTable& table() const { return table_; }
  const CommonOptions& common() const { return common_; }
  int64_t steps_taken() const { return t_; }
  // The weight decay applied to tensor i under the bias/bn rule.
  double weight_decay(size_t i) const { return decay_[i]; }

  // One update of every tensor. params and grads have table().buffer_size() elements; grads are not
  // modified. lr must be finite and >= 0. Throws NonFiniteGradient (nothing written) on NaN/Inf.
  void step(std::span<float> params, std::span<const float> grads, double lr);
  // Asynchronous training: the gradient was computed at weights_at_grad (the worker's copy, w_bak in
  // Zheng et al. 2017), not at params. Delay-compensating optimizers (uses_weight_backup()) use it;
  // the others ignore it.
  void step(std::span<float> params, std::span<const float> grads, double lr,
            std::span<const float> weights_at_grad);
  virtual bool uses_weight_backup() const { return false; }

  // The whole state (step count and every buffer), bitwise. load_state() needs an optimizer of the
  // same name built over the same table; it throws BadInput naming the byte offset otherwise.
  std::vector<uint8_t> save_state() const;
  void load_state(std::span<const uint8_t> bytes);

  // Bytes the update must stream per parameter (reads + writes of weights, gradient and state), the
  // denominator of the bandwidth figures in bench/bench_optim.cpp.
  virtual size_t bytes_per_param() const = 0;

 protected:
  using Chunk = optim::Chunk;
  struct StepContext {
    double lr = 0.0;
    int64_t t = 0;                     // 1-based number of this step
    GradTransform clip;                // apply to every gradient element before use
    const float* backup = nullptr;     // weights the gradient was computed at, or nullptr
  };

  // One update. w and g are the whole flat buffers; index them with chunk ranges.
  virtual void update(float* w, const float* g, const StepContext& ctx) = 0;
  // step() refused this step (a non-finite gradient) before update(): drop whatever was gathered for it (K-FAC's
  // statistics), so that the step can be tried again.
  virtual void refused() {}
  // The optimizer's own state after the common header.
  virtual void save_extra(StateWriter& out) const = 0;
  virtual void load_extra(StateReader& in) = 0;

  const std::vector<Chunk>& chunks() const { return chunks_; }
  float decay_f(size_t tensor) const { return static_cast<float>(decay_[tensor]); }

  // Runs body(const Chunk&) over every chunk, in parallel when the buffer is large.
  template <class F>
  void for_each_chunk(F&& body) const {
    const int64_t n = static_cast<int64_t>(chunks_.size());
#pragma omp parallel for schedule(static) if (parallel_)
    for (int64_t c = 0; c < n; ++c) body(chunks_[c]);
  }

  // Per-tensor sums of two quantities: body(const Chunk&) returns {a, b} for one chunk; the chunk
  // values are added per tensor in chunk order (deterministic for any number of threads).
  template <class F>
  void sum_per_tensor(F&& body, std::vector<double>& a, std::vector<double>& b) const {
    const int64_t n = static_cast<int64_t>(chunks_.size());
    scratch_.resize(chunks_.size());
#pragma omp parallel for schedule(static) if (parallel_)
    for (int64_t c = 0; c < n; ++c) scratch_[c] = body(chunks_[c]);
    a.assign(table_.num_tensors(), 0.0);
    b.assign(table_.num_tensors(), 0.0);
    for (size_t c = 0; c < chunks_.size(); ++c) {
      a[chunks_[c].tensor] += scratch_[c].first;
      b[chunks_[c].tensor] += scratch_[c].second;
    }
  }

 private:
  // Throws NonFiniteGradient if any gradient element is NaN or Inf; returns the raw gradient's
  // global 2-norm when `need_norm`, else 0.
  double check_gradient(const float* g, bool need_norm) const;
  void run_step(float* w, const float* g, double lr, const float* backup);

  std::string name_;
  ParamTable table_;
  CommonOptions common_;
  std::vector<double> decay_;  // per tensor
  std::vector<Chunk> chunks_;
  bool parallel_ = false;
  mutable std::vector<std::pair<double, double>> scratch_;
  int64_t t_ = 0;
};

// Validation helpers shared by the optimizer constructors: throw BadInput naming the key
// (e.g. "/optimizer/momentum: must be in [0, 1), got 1").
void require_nonnegative(double v, const std::string& key);
void require_positive(double v, const std::string& key);
void require_in_unit_open(double v, const std::string& key);   // [0, 1)
void require_in_unit_closed(double v, const std::string& key); // [0, 1]
void check_common(const CommonOptions& c);

// The optimizer names the factory knows, in the order of the config documentation.
const std::vector<std::string>& optimizer_names();

class NoiseSource;  // sgld.hpp

// Builds the optimizer named by the resolved "/optimizer" config section over `table`. Keys that are
// absent take the documented defaults; values are checked (BadInput naming the key). seed feeds the
// SGLD noise stream (dtbench::Rng(seed, {step, block})); sgld_noise, when given, replaces that stream
// (tests feed a fixed sequence).
std::unique_ptr<Optimizer> make_optimizer(const Json& section, ParamTable table, uint64_t seed = 0,
                                          std::shared_ptr<const NoiseSource> sgld_noise = nullptr);

}  // namespace dtbench::optim
