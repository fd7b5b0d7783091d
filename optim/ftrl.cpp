#include "optim/ftrl.hpp"

#include <cmath>

namespace dtbench::optim {

namespace {

// n^(-p): sqrt for the paper's p = -0.5 (exact and vectorisable), pow otherwise.
template <bool kSqrt>
float root(float n, float neg_p) {
  if constexpr (kSqrt) return std::sqrt(n);
  return std::pow(n, neg_p);
}

template <bool kSqrt>
void ftrl_pass(float* __restrict w, const float* __restrict g, float* __restrict z, float* __restrict nacc,
               size_t count, float inv_lr, float neg_p, float l1, float l2, float beta, float wd,
               GradTransform clip) {
  for (size_t i = 0; i < count; ++i) {
    const float d = clip(g[i]) + wd * w[i];
    const float n_old = nacc[i];
    const float n_new = n_old + d * d;
    const float root_new = root<kSqrt>(n_new, neg_p);
    const float sigma = (root_new - root<kSqrt>(n_old, neg_p)) * inv_lr;
    const float zi = z[i] + d - sigma * w[i];
    z[i] = zi;
    nacc[i] = n_new;
    const float shrunk = (zi > 0.0f ? l1 : -l1) - zi;
    w[i] = std::abs(zi) > l1 ? shrunk / ((beta + root_new) * inv_lr + l2) : 0.0f;
  }
}

}  // namespace

Ftrl::Ftrl(ParamTable table, CommonOptions common, FtrlOptions options)
    : Optimizer("ftrl", std::move(table), common), options_(options) {
  require_nonnegative(options_.l1, "/optimizer/l1");
  require_nonnegative(options_.l2, "/optimizer/l2");
  require_nonnegative(options_.beta, "/optimizer/beta");
  require_nonnegative(-options_.lr_power, "/optimizer/lr_power");
  require_nonnegative(options_.initial_accumulator_value, "/optimizer/initial_accumulator_value");
  z_.assign(this->table().buffer_size(), 0.0f);
  n_.assign(this->table().buffer_size(), static_cast<float>(options_.initial_accumulator_value));
}

void Ftrl::update(float* w, const float* g, const StepContext& ctx) {
  if (ctx.lr <= 0.0) {
    // FTRL divides by the learning rate; a zero rate (e.g. the first warmup step from 0) means no step.
    return;
  }
  const float inv_lr = static_cast<float>(1.0 / ctx.lr);
  const float neg_p = static_cast<float>(-options_.lr_power);
  const float l1 = static_cast<float>(options_.l1);
  const float l2 = static_cast<float>(options_.l2);
  const float beta = static_cast<float>(options_.beta);
  const bool paper_root = options_.lr_power == -0.5;
  for_each_chunk([&](const Chunk& c) {
    const size_t n = c.end - c.begin;
    const float wd = decay_f(c.tensor);
    float* wp = w + c.begin;
    const float* gp = g + c.begin;
    float* zp = z_.data() + c.begin;
    float* np = n_.data() + c.begin;
    if (paper_root) ftrl_pass<true>(wp, gp, zp, np, n, inv_lr, neg_p, l1, l2, beta, wd, ctx.clip);
    else ftrl_pass<false>(wp, gp, zp, np, n, inv_lr, neg_p, l1, l2, beta, wd, ctx.clip);
  });
}

void Ftrl::save_extra(StateWriter& out) const {
  out.put_floats(z_);
  out.put_floats(n_);
}

void Ftrl::load_extra(StateReader& in) {
  in.get_floats(z_, "z");
  in.get_floats(n_, "accumulator");
}

}  // namespace dtbench::optim
