// What a model architecture supplies to Model: its parameter layout (filled at construction, in PyTorch's
// named_parameters() order) and a build function that appends its layers to a plan.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "workloads/cpu/plan.hpp"
#include "workloads/models/model.hpp"

namespace dtbench::models {

// Hands out consecutive ranges of the flat parameter buffer and of the buffer array.
class ParamLayout {
 public:
  size_t add_param(std::string name, ParamInfo::Kind kind, std::vector<int64_t> shape);
  // Running mean then running variance, `channels` each; returns the offset of the mean.
  size_t add_running_stats(const std::string& bn_name, int64_t channels);
  const std::vector<ParamInfo>& params() const { return params_; }
  const std::vector<ParamInfo>& buffers() const { return buffers_; }
  size_t param_count() const { return param_count_; }
  size_t buffer_count() const { return buffer_count_; }

 private:
  std::vector<ParamInfo> params_, buffers_;
  size_t param_count_ = 0, buffer_count_ = 0;
};

// Rng stream ids: the initial weights of tensor i come from Rng(seed, {kInitStream, i}); dropout masks from
// Rng(seed, {kDropoutStream, step}).
inline constexpr uint64_t kInitStream = 0x696e6974ULL;           // "init"
inline constexpr uint64_t kDropoutStream = 0x64726f706f7574ULL;  // "dropout"

// Where dropout draws its masks: the model's seed and its training-step counter.
struct DropoutSource {
  uint64_t seed = 0;
  const uint64_t* step = nullptr;
};

struct BuiltNetwork {
  dnnl::memory logits;  // N x classes plain fp32
  // Appends the backward of every layer given the gradient of the logits (training plans).
  std::function<void(cpu::Plan&, const dnnl::memory& dlogits)> backward;
};

class Network {
 public:
  virtual ~Network() = default;
  // input: N x C x H x W in any layout.
  virtual BuiltNetwork build(cpu::Plan& plan, const dnnl::memory& input) const = 0;
  virtual double macs_per_sample() const = 0;
  // Indices (into the parameter table) of the gammas to set to 0 under zero_init_residual.
  virtual std::vector<size_t> last_bn_gammas() const { return {}; }
};

// The architectures (resnet.cpp, mlp.cpp). The spec has been validated.
std::unique_ptr<Network> make_resnet(const ModelSpec& spec, ParamLayout& layout, DropoutSource dropout);
std::unique_ptr<Network> make_mlp(const ModelSpec& spec, ParamLayout& layout, DropoutSource dropout);

}  // namespace dtbench::models
