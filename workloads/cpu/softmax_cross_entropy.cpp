#include "workloads/cpu/softmax_cross_entropy.hpp"

#include <algorithm>
#include <cmath>

namespace dtbench::cpu {

using dnnl::memory;

SoftmaxCrossEntropy::SoftmaxCrossEntropy(Plan& plan, std::string name, const memory& logits, float smoothing)
    : smoothing_(smoothing), logits_(logits) {
  const memory::dims d = logits.get_desc().dims();
  n_ = int(d[0]);
  k_ = int(d[1]);
  if (logits.get_desc() != plain_md(d)) throw std::logic_error("softmax cross-entropy needs plain fp32 logits");
  labels_.assign(size_t(n_), 0);
  prob_.assign(size_t(n_) * size_t(k_), 0.0f);
  plan.forward_host(name, [this]() { forward(); });
}

void SoftmaxCrossEntropy::set_labels(const int32_t* labels) { std::copy(labels, labels + n_, labels_.begin()); }

void SoftmaxCrossEntropy::forward() {
  const float* z = logits();
  double total = 0.0;
  int correct = 0;
  const double eps = smoothing_;
  for (int i = 0; i < n_; ++i) {
    const float* row = z + size_t(i) * size_t(k_);
    float* p = prob_.data() + size_t(i) * size_t(k_);
    const int y = labels_[size_t(i)];
    int arg = 0;
    for (int k = 1; k < k_; ++k) {
      if (row[k] > row[arg]) arg = k;
    }
    correct += arg == y ? 1 : 0;
    const double zmax = row[arg];
    double sum = 0.0, zsum = 0.0;
    for (int k = 0; k < k_; ++k) {
      sum += std::exp(double(row[k]) - zmax);
      zsum += double(row[k]);
    }
    const double lse = zmax + std::log(sum);
    for (int k = 0; k < k_; ++k) p[k] = float(std::exp(double(row[k]) - lse));
    // -sum_k q_k log p_k = lse - (1 - eps) z_y - eps / K sum_k z_k
    total += lse - (1.0 - eps) * double(row[y]) - eps / double(k_) * zsum;
  }
  loss_ = total / double(n_);
  correct_ = correct;
}

memory SoftmaxCrossEntropy::backward(Plan& plan) {
  memory dz = plan.alloc(logits_.get_desc());
  float* out = static_cast<float*>(dz.get_data_handle());
  plan.backward_host("loss.bwd", [this, out]() {
    const float inv_n = 1.0f / float(n_);
    const float off = smoothing_ / float(k_);
    const float on = 1.0f - smoothing_ + off;
    for (int i = 0; i < n_; ++i) {
      const float* p = prob_.data() + size_t(i) * size_t(k_);
      float* g = out + size_t(i) * size_t(k_);
      const int y = labels_[size_t(i)];
      for (int k = 0; k < k_; ++k) g[k] = (p[k] - (k == y ? on : off)) * inv_n;
    }
  });
  return dz;
}

}  // namespace dtbench::cpu
