// Global average pooling: y[n,c] = mean over the H x W positions of x[n,c] (output N x C x 1 x 1, kept in
// the producer's channel-blocked layout so the fully connected layer can read it without a reorder).
// Backward spreads dy[n,c] / (H W) over every position.
#pragma once

#include <string>

#include "workloads/cpu/plan.hpp"

namespace dtbench::cpu {

class GlobalAvgPool {
 public:
  GlobalAvgPool(Plan& plan, std::string name, const dnnl::memory& x);
  const dnnl::memory& y() const { return y_; }
  dnnl::memory backward(Plan& plan, const dnnl::memory& dy);

 private:
  std::string name_;
  dnnl::memory::dims kernel_;
  dnnl::pooling_forward::primitive_desc fwd_pd_;
  dnnl::memory x_, y_;
};

}  // namespace dtbench::cpu
