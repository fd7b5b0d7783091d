// Max pooling over kernel x kernel windows with a stride and padding; padded positions never win (they
// count as -infinity, as in PyTorch). y[n,c,p,q] = max over the window; the backward routes dy to the
// position of the maximum, which oneDNN records in a workspace during the training forward.
#pragma once

#include <string>

#include "workloads/cpu/plan.hpp"

namespace dtbench::cpu {

struct PoolShape {
  int kernel = 3;
  int stride = 2;
  int pad = 1;
  int out_size(int in) const { return (in + 2 * pad - kernel) / stride + 1; }
};

class MaxPool {
 public:
  MaxPool(Plan& plan, std::string name, const PoolShape& shape, const dnnl::memory& x);
  const dnnl::memory& y() const { return y_; }
  dnnl::memory backward(Plan& plan, const dnnl::memory& dy);

 private:
  std::string name_;
  PoolShape shape_;
  dnnl::pooling_forward::primitive_desc fwd_pd_;
  dnnl::memory x_, y_, workspace_;
};

}  // namespace dtbench::cpu
