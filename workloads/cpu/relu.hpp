// Rectified linear unit y = max(x, 0), forward and backward.
//
// oneDNN's eltwise_relu_use_dst_for_bwd variant computes the gradient from the output (dx = dy where y > 0),
// so the input need not be kept. Keeps the producer's layout.
#pragma once

#include <string>

#include "workloads/cpu/plan.hpp"

namespace dtbench::cpu {

class Relu {
 public:
  Relu(Plan& plan, std::string name, const dnnl::memory& x);
  const dnnl::memory& y() const { return y_; }
  dnnl::memory backward(Plan& plan, const dnnl::memory& dy);

 private:
  std::string name_;
  dnnl::eltwise_forward::primitive_desc fwd_pd_;
  dnnl::memory y_;
};

}  // namespace dtbench::cpu
