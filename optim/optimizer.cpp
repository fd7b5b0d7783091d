#include "optim/optimizer.hpp"

#include <bit>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace dtbench::optim {

namespace {


std::string format_number(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

// Largest |bit pattern| of a chunk: >= 0x7f800000 exactly when some element is NaN or Inf. Integer
// max vectorises without reassociation concerns, so this pass runs at memory speed.
bool chunk_is_finite(const float* g, size_t n) {
  uint32_t worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(g[i]) & 0x7fffffffu;
    worst = bits > worst ? bits : worst;
  }
  return worst < 0x7f800000u;
}

double chunk_sumsq(const float* g, size_t n) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(g[i]) * static_cast<double>(g[i]);
  return s;
}

}  // namespace

NonFiniteGradient::NonFiniteGradient(const std::string& tensor, size_t index, float value, int64_t step)
    : NonFiniteGradient(tensor + "[" + std::to_string(index) + "] = " + format_number(value) +
                            "; the step was refused and no weight or optimizer state was changed",
                        tensor, index, step) {}

NonFiniteGradient::NonFiniteGradient(std::string detail, const std::string& tensor, size_t index, int64_t step)
    : RunFailed("non-finite gradient at step " + std::to_string(step) + ": " + detail),
      detail_(std::move(detail)),
      tensor_(tensor),
      index_(index),
      step_(step) {}

void require_nonnegative(double v, const std::string& key) {
  if (!(v >= 0.0) || !std::isfinite(v)) throw BadInput(key + ": must be a finite number >= 0, got " + format_number(v));
}

void require_positive(double v, const std::string& key) {
  if (!(v > 0.0) || !std::isfinite(v)) throw BadInput(key + ": must be a finite number > 0, got " + format_number(v));
}

void require_in_unit_open(double v, const std::string& key) {
  if (!(v >= 0.0 && v < 1.0)) throw BadInput(key + ": must be in [0, 1), got " + format_number(v));
}

void require_in_unit_closed(double v, const std::string& key) {
  if (!(v >= 0.0 && v <= 1.0)) throw BadInput(key + ": must be in [0, 1], got " + format_number(v));
}

void check_common(const CommonOptions& c) {
  require_nonnegative(c.weight_decay, "/optimizer/weight_decay");
  require_nonnegative(c.clip_grad_norm, "/optimizer/clip_grad_norm");
  require_nonnegative(c.clip_grad_value, "/optimizer/clip_grad_value");
}

std::vector<double> weight_decay_table(const ParamTable& table, const CommonOptions& common) {
  std::vector<double> decay(table.num_tensors());
  for (size_t i = 0; i < table.num_tensors(); ++i) {
    const bool exempt = common.no_decay_bn_bias && is_bn_or_bias(table[i].kind);
    decay[i] = exempt ? 0.0 : common.weight_decay;
  }
  return decay;
}

std::vector<Chunk> split_into_chunks(const ParamTable& table, size_t chunk_elements) {
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < table.num_tensors(); ++i) {
    const size_t end = table[i].offset + table[i].size;
    for (size_t b = table[i].offset; b < end; b += chunk_elements) {
      chunks.push_back({i, b, std::min(b + chunk_elements, end)});
    }
  }
  return chunks;
}

void report_non_finite(const ParamTable& table, int64_t step,
                       const std::function<std::span<const float>(const TensorInfo&)>& values) {
  for (const TensorInfo& t : table.tensors()) {
    const std::span<const float> g = values(t);
    for (size_t i = 0; i < g.size(); ++i) {
      if (!std::isfinite(g[i])) throw NonFiniteGradient(t.name, i, g[i], step);
    }
  }
  throw std::logic_error("Optimizer: non-finite gradient reported but not found");
}

Optimizer::Optimizer(std::string name, ParamTable table, CommonOptions common)
    : name_(std::move(name)), table_(std::move(table)), common_(common) {
  check_common(common_);
  decay_ = weight_decay_table(table_, common_);
  chunks_ = split_into_chunks(table_, kChunkElements);
  parallel_ = table_.num_params() >= kParallelMinElements;
}

void check_step_buffers(const ParamTable& table, size_t params, size_t grads, const std::string& who) {
  if (params != table.buffer_size() || grads != table.buffer_size()) {
    throw std::invalid_argument(who + ": parameter and gradient buffers must have " +
                                std::to_string(table.buffer_size()) + " elements, got " + std::to_string(params) +
                                " and " + std::to_string(grads));
  }
}

void check_learning_rate(double lr, const std::string& who) {
  if (!(lr >= 0.0) || !std::isfinite(lr)) {
    throw std::invalid_argument(who + ": learning rate must be finite and >= 0, got " + format_number(lr));
  }
}

void Optimizer::step(std::span<float> params, std::span<const float> grads, double lr) {
  check_step_buffers(table_, params.size(), grads.size(), "Optimizer::step");
  run_step(params.data(), grads.data(), lr, nullptr);
}

void Optimizer::step(std::span<float> params, std::span<const float> grads, double lr,
                     std::span<const float> weights_at_grad) {
  check_step_buffers(table_, params.size(), grads.size(), "Optimizer::step");
  if (weights_at_grad.size() != table_.buffer_size()) {
    throw std::invalid_argument("Optimizer::step: weight backup must have " + std::to_string(table_.buffer_size()) +
                                " elements, got " + std::to_string(weights_at_grad.size()));
  }
  run_step(params.data(), grads.data(), lr, weights_at_grad.data());
}

double Optimizer::check_gradient(const float* g, bool need_norm) const {
  std::vector<double> bad, sumsq;
  sum_per_tensor(
      [&](const Chunk& c) -> std::pair<double, double> {
        if (need_norm) {
          const double s = chunk_sumsq(g + c.begin, c.end - c.begin);
          return {std::isfinite(s) ? 0.0 : 1.0, s};
        }
        return {chunk_is_finite(g + c.begin, c.end - c.begin) ? 0.0 : 1.0, 0.0};
      },
      bad, sumsq);
  double total = 0.0;
  for (size_t i = 0; i < bad.size(); ++i) {
    if (bad[i] != 0.0) {
      report_non_finite(table_, t_ + 1, [g](const TensorInfo& t) { return std::span<const float>(g + t.offset, t.size); });
    }
    total += sumsq[i];
  }
  return std::sqrt(total);
}

void Optimizer::run_step(float* w, const float* g, double lr, const float* backup) {
  check_learning_rate(lr, "Optimizer::step");
  const bool need_norm = common_.clip_grad_norm > 0.0;
  double norm = 0;
  try {
    norm = check_gradient(g, need_norm);
  } catch (const NonFiniteGradient&) {
    refused();
    throw;
  }
  StepContext ctx;
  ctx.lr = lr;
  ctx.t = t_ + 1;
  ctx.clip = make_grad_transform(common_.clip_grad_norm, common_.clip_grad_value, norm);
  ctx.backup = backup;
  update(w, g, ctx);
  ++t_;
}

std::vector<uint8_t> Optimizer::save_state() const {
  StateWriter out;
  put_state_header(out, name_, table_.fingerprint(), t_);
  save_extra(out);
  return out.take();
}

void Optimizer::load_state(std::span<const uint8_t> bytes) {
  StateReader in(bytes);
  const int64_t t = get_state_header(in, name_, table_.fingerprint());
  // A malformed tail must not leave the state half-loaded: keep a copy to put back.
  const std::vector<uint8_t> previous = save_state();
  try {
    load_extra(in);
    in.expect_end();
  } catch (...) {
    StateReader undo(previous);
    get_state_header(undo, name_, table_.fingerprint());
    load_extra(undo);
    throw;
  }
  t_ = t;
}

}  // namespace dtbench::optim
