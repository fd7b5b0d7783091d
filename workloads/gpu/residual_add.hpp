// Residual addition y = a + b (He et al. 2016), optionally followed by ReLU: our own kernel, the GPU twin
// of workloads/cpu/residual_add.hpp. The forward writes over a (in place: a is the block's last batch-norm
// output, whose backward needs only its input). The backward returns one tensor, the gradient of the sum
// (dy masked by y > 0 with ReLU), which is the gradient of both a and b. accumulate_backward adds one
// branch's gradient into the other's where they meet again.
#pragma once

#include <string>

#include "workloads/gpu/plan.hpp"

namespace dtbench::gpu {

class ResidualAdd {
 public:
  ResidualAdd(GpuPlan& plan, std::string name, const Tensor& a, const Tensor& b, bool relu);
  const Tensor& y() const { return y_; }
  Tensor backward(GpuPlan& plan, const Tensor& dy);

 private:
  std::string name_;
  bool relu_;
  Tensor y_;
};

// Backward operation: into += other (same shape and type).
void accumulate_backward(GpuPlan& plan, const std::string& name, const Tensor& into, const Tensor& other);

}  // namespace dtbench::gpu
