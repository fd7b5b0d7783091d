#include "workloads/cpu/sync_batch_norm.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace dtbench::cpu {

using dnnl::memory;

SyncBatchNorm::SyncBatchNorm(Plan& plan, std::string name, const BatchNormShape& s, size_t gamma_offset,
                             size_t beta_offset, size_t running_offset, const memory& x)
    : name_(std::move(name)),
      shape_(s),
      gamma_offset_(gamma_offset),
      beta_offset_(beta_offset),
      running_offset_(running_offset) {
  if (!plan.training() || !plan.context().cross_replica_sum)
    throw std::logic_error(name_ + ": synchronised batch norm needs a training plan with a cross-replica sum");
  const memory::dims xd = x.get_desc().dims();
  if (xd.size() != 4 || xd[1] != s.channels)
    throw std::logic_error(name_ + ": synchronised batch norm expects N x C x H x W input with C = channels");
  n_ = xd[0];
  hw_ = xd[2] * xd[3];
  // One value per channel on a replica is allowed: M over all replicas is what must exceed 1 (checked per step).
  x_ = plan.forward_as(x, plain_md(xd), name_ + ".src");
  y_ = plan.alloc(plain_md(xd));
  const size_t c = static_cast<size_t>(s.channels);
  mean_.assign(c, 0.0);
  var_.assign(c, 0.0);
  invstd_.assign(c, 0.0);
  sums_.assign(2 * c + 1, 0.0);
  plan.forward_host(name_ + ".sync", [this, &plan]() { forward_pass(plan); });
  // A step of gradient checkpointing recomputes the forward pass but must not update the averages twice.
  plan.forward_state(name_ + ".running_stats", [this, &plan]() { update_running(plan); });
}

void SyncBatchNorm::update_running(Plan& plan) {
  const int64_t C = shape_.channels;
  const double M = global_count_;
  float* running = plan.buffers() + running_offset_;
  const float mom = shape_.momentum;
  for (int64_t c = 0; c < C; ++c) {
    running[c] = (1.0f - mom) * running[c] + mom * static_cast<float>(mean_[c]);
    running[C + c] = (1.0f - mom) * running[C + c] + mom * static_cast<float>(var_[c] * M / (M - 1.0));
  }
}

void SyncBatchNorm::forward_pass(Plan& plan) {
  const int64_t C = shape_.channels, N = n_, HW = hw_;
  const float* x = static_cast<const float*>(x_.get_data_handle());
  float* y = static_cast<float*>(y_.get_data_handle());
  double* sums = sums_.data();
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    double s1 = 0.0, s2 = 0.0;
    for (int64_t n = 0; n < N; ++n) {
      const float* p = x + (n * C + c) * HW;
#pragma omp simd reduction(+ : s1, s2)
      for (int64_t i = 0; i < HW; ++i) {
        const double v = p[i];
        s1 += v;
        s2 += v * v;
      }
    }
    sums[c] = s1;
    sums[C + c] = s2;
  }
  sums[2 * C] = static_cast<double>(N * HW);
  plan.context().cross_replica_sum(sums, sums_.size());
  const double M = sums[2 * C];
  if (M < 2.0)
    throw BadInput(name_ + ": batch norm in training needs more than one value per channel over all replicas, got " +
                   std::to_string(static_cast<int64_t>(M)));
  global_count_ = M;

  const float* gamma = plan.params() + gamma_offset_;
  const float* beta = plan.params() + beta_offset_;
  const bool relu = shape_.fuse_relu;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    const double mu = sums[c] / M;
    const double var = std::max(sums[C + c] / M - mu * mu, 0.0);
    mean_[c] = mu;
    var_[c] = var;
    invstd_[c] = 1.0 / std::sqrt(var + shape_.eps);
    // y = a x + b with a = gamma / sigma, b = beta - mu a.
    const float a = static_cast<float>(gamma[c] * invstd_[c]);
    const float b = static_cast<float>(beta[c] - mu * gamma[c] * invstd_[c]);
    for (int64_t n = 0; n < N; ++n) {
      const float* px = x + (n * C + c) * HW;
      float* py = y + (n * C + c) * HW;
#pragma omp simd
      for (int64_t i = 0; i < HW; ++i) {
        const float v = a * px[i] + b;
        py[i] = relu ? std::max(v, 0.0f) : v;
      }
    }
  }
}

memory SyncBatchNorm::backward(Plan& plan, const memory& dy) {
  const memory::dims xd = x_.get_desc().dims();
  memory dy2 = plan.backward_as(dy, plain_md(xd), name_ + ".diff_dst");
  memory dx = plan.alloc(plain_md(xd));
  // The lambda holds the memories themselves, so they live as long as the operation does.
  plan.backward_host(name_ + ".sync_bwd", [this, &plan, dy2, dx]() {
    backward_pass(plan, static_cast<const float*>(dy2.get_data_handle()), static_cast<float*>(dx.get_data_handle()));
  });
  plan.announce(beta_offset_, size_t(shape_.channels));
  plan.announce(gamma_offset_, size_t(shape_.channels));
  return dx;
}

void SyncBatchNorm::backward_pass(Plan& plan, const float* dy, float* dx) {
  const int64_t C = shape_.channels, N = n_, HW = hw_;
  const float* x = static_cast<const float*>(x_.get_data_handle());
  const float* y = static_cast<const float*>(y_.get_data_handle());
  const bool relu = shape_.fuse_relu;
  float* dgamma = plan.grads() + gamma_offset_;
  float* dbeta = plan.grads() + beta_offset_;
  double* sums = sums_.data();
  // g = dy where the fused ReLU passed its input (y > 0), else 0.
  const float keep_below = relu ? 0.0f : -std::numeric_limits<float>::infinity();
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    double sg = 0.0, sgx = 0.0;
    const double mu = mean_[c], is = invstd_[c];
    for (int64_t n = 0; n < N; ++n) {
      const int64_t base = (n * C + c) * HW;
#pragma omp simd reduction(+ : sg, sgx)
      for (int64_t i = 0; i < HW; ++i) {
        const double g = y[base + i] > keep_below ? dy[base + i] : 0.0f;
        sg += g;
        sgx += g * (x[base + i] - mu) * is;
      }
    }
    dbeta[c] = static_cast<float>(sg);
    dgamma[c] = static_cast<float>(sgx);
    sums[c] = sg;
    sums[C + c] = sgx;
  }
  plan.context().cross_replica_sum(sums, static_cast<size_t>(2 * C));
  const double M = global_count_;
  const float* gamma = plan.params() + gamma_offset_;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    const double is = invstd_[c];
    const float k = static_cast<float>(gamma[c] * is);
    const float mean_g = static_cast<float>(sums[c] / M);
    const float mean_gx = static_cast<float>(sums[C + c] / M);
    const float mu = static_cast<float>(mean_[c]), fis = static_cast<float>(is);
    for (int64_t n = 0; n < N; ++n) {
      const int64_t base = (n * C + c) * HW;
#pragma omp simd
      for (int64_t i = 0; i < HW; ++i) {
        const float xhat = (x[base + i] - mu) * fis;
        const float g = y[base + i] > keep_below ? dy[base + i] : 0.0f;
        dx[base + i] = k * (g - mean_g - xhat * mean_gx);
      }
    }
  }
}

}  // namespace dtbench::cpu
