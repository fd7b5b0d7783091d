#include "optim/sgd.hpp"

namespace dtbench::optim {

namespace {

// One tensor chunk of momentum SGD. kFirst: the buffer starts as d (torch); kNesterov: NAG.
// keep is 1 for the L2 form and 1 - 2 eta lambda for the decoupled form (wd is then 0).
template <bool kFirst, bool kNesterov>
void momentum_pass(float* __restrict w, const float* __restrict g, float* __restrict b, size_t n, float lr,
                   float mu, float damp, float wd, float keep, GradTransform clip) {
  for (size_t i = 0; i < n; ++i) {
    const float d = clip(g[i]) + wd * w[i];
    const float bi = kFirst ? d : mu * b[i] + damp * d;
    b[i] = bi;
    const float step = kNesterov ? d + mu * bi : bi;
    w[i] = keep * w[i] - lr * step;
  }
}

void plain_pass(float* __restrict w, const float* __restrict g, size_t n, float lr, float wd, float keep,
                GradTransform clip) {
  for (size_t i = 0; i < n; ++i) w[i] = keep * w[i] - lr * (clip(g[i]) + wd * w[i]);
}

}  // namespace

void check_options(const SgdOptions& o) {
  require_in_unit_open(o.momentum, "/optimizer/momentum");
  require_in_unit_closed(o.dampening, "/optimizer/dampening");
  if (o.nesterov && (o.momentum == 0.0 || o.dampening != 0.0)) {
    throw BadInput("/optimizer/nesterov: Nesterov momentum needs momentum > 0 and dampening 0");
  }
  // Dampening scales the gradient into the momentum buffer: without momentum there is none, and it changed nothing
  // (found by a hunt), as Nesterov without momentum is refused above.
  if (o.dampening != 0.0 && o.momentum == 0.0) {
    throw BadInput("/optimizer/dampening: " + std::to_string(o.dampening) + " needs momentum > 0 (it scales the "
                   "gradient into the momentum buffer, which momentum 0 does not keep)");
  }
}

Sgd::Sgd(ParamTable table, CommonOptions common, SgdOptions options)
    : Optimizer("sgd", std::move(table), common), options_(options) {
  check_options(options_);
  if (options_.momentum > 0.0) buf_.assign(this->table().buffer_size(), 0.0f);
}

void Sgd::update(float* w, const float* g, const StepContext& ctx) {
  const float lr = static_cast<float>(ctx.lr);
  const float mu = static_cast<float>(options_.momentum);
  const float damp = static_cast<float>(1.0 - options_.dampening);
  const bool first = ctx.t == 1 || fresh_buffer_;
  fresh_buffer_ = false;
  for_each_chunk([&](const Chunk& c) {
    const size_t n = c.end - c.begin;
    float* wp = w + c.begin;
    const float* gp = g + c.begin;
    // L2: wd enters the gradient; decoupled: it shrinks the weight (and leaves the gradient alone).
    const double lambda = weight_decay(c.tensor);
    const float wd = options_.decoupled_weight_decay ? 0.0f : static_cast<float>(lambda);
    const float keep = options_.decoupled_weight_decay ? static_cast<float>(1.0 - 2.0 * ctx.lr * lambda) : 1.0f;
    if (buf_.empty()) {
      plain_pass(wp, gp, n, lr, wd, keep, ctx.clip);
      return;
    }
    float* bp = buf_.data() + c.begin;
    if (first && options_.nesterov) momentum_pass<true, true>(wp, gp, bp, n, lr, mu, damp, wd, keep, ctx.clip);
    else if (first) momentum_pass<true, false>(wp, gp, bp, n, lr, mu, damp, wd, keep, ctx.clip);
    else if (options_.nesterov) momentum_pass<false, true>(wp, gp, bp, n, lr, mu, damp, wd, keep, ctx.clip);
    else momentum_pass<false, false>(wp, gp, bp, n, lr, mu, damp, wd, keep, ctx.clip);
  });
}

// A buffer not yet started (continued from a state without momentum) is saved as none, so that it starts again
// after a restore.
void Sgd::save_extra(StateWriter& out) const {
  out.put_floats(fresh_buffer_ ? std::span<const float>{} : std::span<const float>(buf_));
}

// --init-from a run of another momentum setting: its buffer dropped, or, where it kept none, this one starts as
// torch starts a missing buffer, with the next step's gradient (not as a zero buffer, which dampening would scale).
void Sgd::load_extra(StateReader& in) {
  fresh_buffer_ = !in.get_switched_floats(buf_, "momentum buffer") && !buf_.empty();
}

}  // namespace dtbench::optim
