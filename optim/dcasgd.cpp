#include "optim/dcasgd.hpp"

#include <algorithm>

namespace dtbench::optim {

namespace {

// kBackup: w_bak is passed in; kFirst (only without a backup): w_bak = w.
template <bool kBackup, bool kFirst, bool kMomentum>
void dcasgd_pass(float* __restrict w, const float* __restrict g, const float* __restrict bak,
                 float* __restrict prev, float* __restrict v, size_t n, float lr, float mu, float lambda, float wd,
                 GradTransform clip) {
  for (size_t i = 0; i < n; ++i) {
    const float gi = clip(g[i]);
    const float wi = w[i];
    const float wb = kBackup ? bak[i] : (kFirst ? wi : prev[i]);
    const float d = gi + wd * wi + lambda * gi * gi * (wi - wb);
    prev[i] = wi;
    if constexpr (kMomentum) {
      const float vi = mu * v[i] - lr * d;
      v[i] = vi;
      w[i] = wi + vi;
    } else {
      w[i] = wi - lr * d;
    }
  }
}

}  // namespace

Dcasgd::Dcasgd(ParamTable table, CommonOptions common, DcasgdOptions options)
    : Optimizer("dcasgd", std::move(table), common), options_(options) {
  require_in_unit_open(options_.momentum, "/optimizer/momentum");
  require_nonnegative(options_.lambda, "/optimizer/lambda");
  previous_.assign(this->table().buffer_size(), 0.0f);
  if (options_.momentum > 0.0) v_.assign(this->table().buffer_size(), 0.0f);
}

void Dcasgd::update(float* w, const float* g, const StepContext& ctx) {
  const float lr = static_cast<float>(ctx.lr);
  const float mu = static_cast<float>(options_.momentum);
  const float lambda = static_cast<float>(options_.lambda);
  const bool first = ctx.t == 1;
  const bool momentum = !v_.empty();
  for_each_chunk([&](const Chunk& c) {
    const size_t n = c.end - c.begin;
    const float wd = decay_f(c.tensor);
    float* wp = w + c.begin;
    const float* gp = g + c.begin;
    // A backup that is the weights themselves means no delay: the same as w_bak = w.
    const float* bp = ctx.backup && ctx.backup != w ? ctx.backup + c.begin : nullptr;
    const bool no_delay = ctx.backup == w || (!ctx.backup && first);
    float* pp = previous_.data() + c.begin;
    float* vp = momentum ? v_.data() + c.begin : nullptr;
    const GradTransform clip = ctx.clip;
    if (bp) {
      if (momentum) dcasgd_pass<true, false, true>(wp, gp, bp, pp, vp, n, lr, mu, lambda, wd, clip);
      else dcasgd_pass<true, false, false>(wp, gp, bp, pp, vp, n, lr, mu, lambda, wd, clip);
    } else if (no_delay) {
      if (momentum) dcasgd_pass<false, true, true>(wp, gp, bp, pp, vp, n, lr, mu, lambda, wd, clip);
      else dcasgd_pass<false, true, false>(wp, gp, bp, pp, vp, n, lr, mu, lambda, wd, clip);
    } else {
      if (momentum) dcasgd_pass<false, false, true>(wp, gp, bp, pp, vp, n, lr, mu, lambda, wd, clip);
      else dcasgd_pass<false, false, false>(wp, gp, bp, pp, vp, n, lr, mu, lambda, wd, clip);
    }
  });
}

void Dcasgd::save_extra(StateWriter& out) const {
  out.put_floats(previous_);
  out.put_floats(v_);
}

void Dcasgd::load_extra(StateReader& in) {
  in.get_floats(previous_, "previous weights");
  if (!in.get_switched_floats(v_, "momentum buffer")) std::fill(v_.begin(), v_.end(), 0.0f);  // as a new one starts
}

}  // namespace dtbench::optim
