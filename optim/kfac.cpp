#include "optim/kfac.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dtbench::optim {

void check_options(const KfacOptions& o) {
  require_in_unit_open(o.momentum, "/optimizer/momentum");
  require_positive(o.damping, "/optimizer/damping");
  require_in_unit_open(o.factor_decay, "/optimizer/factor_decay");
  if (o.factor_interval < 1)
    throw BadInput("/optimizer/factor_interval: must be >= 1, got " + std::to_string(o.factor_interval));
  if (o.inverse_interval < 1)
    throw BadInput("/optimizer/inverse_interval: must be >= 1, got " + std::to_string(o.inverse_interval));
  require_nonnegative(o.kl_clip, "/optimizer/kl_clip");
  if (o.statistics_images < 0)
    throw BadInput("/optimizer/statistics_images: must be >= 0, got " + std::to_string(o.statistics_images));
}

Kfac::Kfac(ParamTable table, CommonOptions common, KfacOptions options)
    : Optimizer("kfac", std::move(table), common), options_(options) {
  check_options(options_);
  const ParamTable& t = this->table();
  size_t floats = 0;
  for (size_t i = 0; i < t.num_tensors(); ++i) {
    const TensorInfo& info = t[i];
    if (info.kind != TensorKind::conv_weight && info.kind != TensorKind::fc_weight) continue;
    if (info.rows == 0 || info.size % info.rows != 0)
      throw BadInput("/optimizer/name: kfac needs the shape of weight tensor '" + info.name + "'");
    const Layer l{i, info.rows, info.size / info.rows};
    layers_.push_back(l);
    stats_offset_.push_back(floats);
    floats += l.cols * l.cols + l.rows * l.rows;
    a_.emplace_back(l.cols * l.cols, 0.0);
    g_.emplace_back(l.rows * l.rows, 0.0);
    a_inv_.emplace_back(l.cols * l.cols, 0.0f);
    g_inv_.emplace_back(l.rows * l.rows, 0.0f);
  }
  stats_.assign(floats, 0.0f);
  observations_.assign(layers_.size(), 0);
  momentum_.assign(t.buffer_size(), 0.0f);
  direction_.assign(t.buffer_size(), 0.0f);
}

bool Kfac::wants_statistics() const { return steps_taken() % options_.factor_interval == 0; }

void Kfac::observe(const LayerActivity& full) {
  LayerActivity act = full;
  if (options_.statistics_images > 0 && options_.statistics_images < full.n) {  // the first images only
    act.batch = full.batch > 0 ? full.batch : full.n;
    act.n = static_cast<int>(options_.statistics_images);
  }
  if (stats_finished_) throw std::logic_error("kfac: observe() after statistics() in the same step");
  for (size_t l = 0; l < layers_.size(); ++l) {
    const TensorInfo& info = table()[layers_[l].tensor];
    if (info.offset != act.weight_offset) continue;
    const size_t cols = size_t(act.in_c) * size_t(act.kernel) * size_t(act.kernel);
    if (size_t(act.out_c) != layers_[l].rows || cols != layers_[l].cols)
      throw std::invalid_argument("kfac: the activity of '" + info.name + "' does not match its weight's shape");
    if (observations_[l] == 0) {  // the first observation of this step starts from zero
      std::fill_n(stats_.begin() + std::ptrdiff_t(stats_offset_[l]), cols * cols + layers_[l].rows * layers_[l].rows,
                  0.0f);
    }
    float* base = stats_.data() + stats_offset_[l];
    add_kronecker_factors(act, {base, cols * cols}, {base + cols * cols, layers_[l].rows * layers_[l].rows});
    observations_[l]++;
    return;
  }
  throw std::invalid_argument("kfac: no preconditioned weight at offset " + std::to_string(act.weight_offset));
}

void Kfac::finish_statistics() {
  if (stats_finished_) return;
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (observations_[l] == 0)
      throw std::logic_error("kfac: no statistics of '" + table()[layers_[l].tensor].name +
                             "' in a statistics step (the backward must report every conv and fc layer)");
    if (observations_[l] == 1) continue;
    const float inv = 1.0f / static_cast<float>(observations_[l]);
    const size_t n = layers_[l].cols * layers_[l].cols + layers_[l].rows * layers_[l].rows;
    for (size_t i = 0; i < n; ++i) stats_[stats_offset_[l] + i] *= inv;
  }
  stats_finished_ = true;
}

std::span<float> Kfac::statistics() {
  if (layers_.empty() || observations_[0] == 0) return {};
  finish_statistics();
  return stats_;
}

void Kfac::next_factors(std::vector<std::vector<double>>& a, std::vector<std::vector<double>>& g) const {
  for (size_t l = 0; l < layers_.size(); ++l) {
    const float* s = stats_.data() + stats_offset_[l];
    const size_t n = layers_[l].cols * layers_[l].cols + layers_[l].rows * layers_[l].rows;
    for (size_t i = 0; i < n; ++i)
      if (!std::isfinite(s[i]))
        throw NonFiniteGradient(table()[layers_[l].tensor].name + " (K-FAC statistics)", i, s[i], steps_taken() + 1);
  }
  const double xi = have_factors_ ? options_.factor_decay : 0.0;
  a.resize(layers_.size()), g.resize(layers_.size());
  for (size_t l = 0; l < layers_.size(); ++l) {
    const float* s = stats_.data() + stats_offset_[l];
    const size_t na = a_[l].size(), ng = g_[l].size();
    a[l].resize(na), g[l].resize(ng);
    for (size_t i = 0; i < na; ++i) a[l][i] = xi * a_[l][i] + (1 - xi) * double(s[i]);
    for (size_t i = 0; i < ng; ++i) g[l][i] = xi * g_[l][i] + (1 - xi) * double(s[na + i]);
  }
}

void Kfac::inverses_of(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& g,
                       std::vector<std::vector<float>>& a_inv, std::vector<std::vector<float>>& g_inv) const {
  const int64_t n = static_cast<int64_t>(layers_.size());
  a_inv.resize(layers_.size()), g_inv.resize(layers_.size());
  for (size_t l = 0; l < layers_.size(); ++l) a_inv[l].resize(a_inv_[l].size()), g_inv[l].resize(g_inv_[l].size());
  std::vector<char> failed(layers_.size(), 0);
  // Layers are independent; each inverse is a serial Cholesky, so the layers are spread over the threads.
#pragma omp parallel for schedule(dynamic)
  for (int64_t l = 0; l < n; ++l) {
    const Layer& L = layers_[size_t(l)];
    const FactorDamping d = factored_damping(a[size_t(l)], L.cols, g[size_t(l)], L.rows, options_.damping);
    failed[size_t(l)] = !damped_inverse(a[size_t(l)], L.cols, d.a, a_inv[size_t(l)]) ||
                        !damped_inverse(g[size_t(l)], L.rows, d.g, g_inv[size_t(l)]);
  }
  for (size_t l = 0; l < layers_.size(); ++l)
    if (failed[l])  // finite positive semidefinite factors plus a positive damping fail only by rounding
      throw RunFailed("K-FAC: the damped factors of '" + table()[layers_[l].tensor].name + "' at step " +
                      std::to_string(steps_taken() + 1) +
                      " are not positive definite in double precision; raise /optimizer/damping");
}

void Kfac::drop_statistics() {
  std::fill(observations_.begin(), observations_.end(), 0);
  stats_finished_ = false;
}

void Kfac::refused() { drop_statistics(); }

void Kfac::update(float* w, const float* g, const StepContext& ctx) {
  const int64_t t = ctx.t;
  // Everything that may throw comes first, into temporaries; the optimizer changes only after it.
  const bool statistics_step = (t - 1) % options_.factor_interval == 0;
  const bool inverse_step = (t - 1) % options_.inverse_interval == 0;
  std::vector<std::vector<double>> a_next, g_next;
  std::vector<std::vector<float>> a_inv_next, g_inv_next;
  try {
    if (statistics_step) {
      finish_statistics();
      next_factors(a_next, g_next);
    } else if (!have_factors_) {
      throw std::logic_error("kfac: a step before any statistics");
    }
    if (inverse_step) inverses_of(statistics_step ? a_next : a_, statistics_step ? g_next : g_, a_inv_next, g_inv_next);
  } catch (...) {
    drop_statistics();
    throw;
  }
  if (statistics_step) {
    a_.swap(a_next), g_.swap(g_next);
    have_factors_ = true;
    drop_statistics();  // consumed: the next statistics step starts afresh
  }
  if (inverse_step) a_inv_.swap(a_inv_next), g_inv_.swap(g_inv_next);

  // The direction: nu P for weights, the clipped gradient elsewhere.
  const ParamTable& table = this->table();
  for_each_chunk([&](const Chunk& c) {
    for (size_t i = c.begin; i < c.end; ++i) direction_[i] = ctx.clip(g[i]);
  });
  double vg = 0;  // sum over weights of <P, dW>
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    const size_t off = table[L.tensor].offset;
    scratch_.resize(L.rows * L.cols);
    float* dw = direction_.data() + off;
    sgemm(false, false, L.rows, L.cols, L.rows, 1.0f, g_inv_[l].data(), dw, 0.0f, scratch_.data());
    sgemm(false, false, L.rows, L.cols, L.cols, 1.0f, scratch_.data(), a_inv_[l].data(), 0.0f, dw);
    // dw now holds P; <P, dW> reads dW again from g.
    for (size_t i = 0; i < L.rows * L.cols; ++i) vg += double(dw[i]) * double(ctx.clip(g[off + i]));
  }
  nu_ = 1.0;
  if (options_.kl_clip > 0 && vg > 0) nu_ = std::min(1.0, std::sqrt(options_.kl_clip / (ctx.lr * ctx.lr * vg)));
  const float nu = static_cast<float>(nu_);
  if (nu != 1.0f)
    for (const Layer& L : layers_) {
      float* dw = direction_.data() + table[L.tensor].offset;
      for (size_t i = 0; i < L.rows * L.cols; ++i) dw[i] *= nu;
    }

  const float lr = static_cast<float>(ctx.lr);
  const float mu = static_cast<float>(options_.momentum);
  const bool first = t == 1;
  for_each_chunk([&](const Chunk& c) {
    const float wd = decay_f(c.tensor);
    for (size_t i = c.begin; i < c.end; ++i) {
      const float d = direction_[i] + wd * w[i];
      const float b = first ? d : mu * momentum_[i] + d;
      momentum_[i] = b;
      w[i] -= lr * b;
    }
  });
}

void Kfac::save_extra(StateWriter& out) const {
  out.put_u64(have_factors_ ? 1 : 0);
  for (size_t l = 0; l < layers_.size(); ++l) {
    out.put_doubles(a_[l]);
    out.put_doubles(g_[l]);
    out.put_floats(a_inv_[l]);
    out.put_floats(g_inv_[l]);
  }
  out.put_floats(momentum_);
}

void Kfac::load_extra(StateReader& in) {
  const uint64_t have = in.get_u64();
  if (have > 1) throw BadInput("kfac state: byte " + std::to_string(in.offset()) + ": bad factor flag");
  have_factors_ = have == 1;
  for (size_t l = 0; l < layers_.size(); ++l) {
    in.get_doubles(a_[l], "K-FAC factor A");
    in.get_doubles(g_[l], "K-FAC factor G");
    in.get_floats(a_inv_[l], "K-FAC inverse of A");
    in.get_floats(g_inv_[l], "K-FAC inverse of G");
  }
  in.get_floats(momentum_, "momentum buffer");
  drop_statistics();
}

}  // namespace dtbench::optim
