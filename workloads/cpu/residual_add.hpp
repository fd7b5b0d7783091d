// Residual addition y = a + b of two same-shaped tensors (He et al. 2016), optionally followed by ReLU.
//
// Forward is one binary primitive with the ReLU as a post-op. Backward: the gradient of the sum goes
// unchanged to both inputs, so backward returns one tensor, ds = dy (dy masked by y > 0 with ReLU). Where a
// tensor feeds two branches, their gradients meet again: accumulate_backward adds one into the other.
#pragma once

#include <string>

#include "workloads/cpu/plan.hpp"

namespace dtbench::cpu {

class ResidualAdd {
 public:
  // b is reordered to a's layout if they differ. in_place writes y over a (allowed when nothing else reads a
  // after this layer, e.g. a batch norm's output whose backward needs only its input).
  ResidualAdd(Plan& plan, std::string name, const dnnl::memory& a, const dnnl::memory& b, bool relu,
              bool in_place);
  const dnnl::memory& y() const { return y_; }
  // The gradient of a + b: it is the gradient of both a and b.
  dnnl::memory backward(Plan& plan, const dnnl::memory& dy);

 private:
  std::string name_;
  bool relu_;
  dnnl::memory y_;
};

// Backward operation: into += other, in place (other is reordered to into's layout if needed).
void accumulate_backward(Plan& plan, const std::string& name, const dnnl::memory& into, const dnnl::memory& other);

}  // namespace dtbench::cpu
