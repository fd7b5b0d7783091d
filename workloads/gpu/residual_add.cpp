#include "workloads/gpu/residual_add.hpp"

#include <stdexcept>

#include "workloads/gpu/kernels.hpp"

namespace dtbench::gpu {

namespace {
void require_same(const Tensor& a, const Tensor& b, const std::string& name) {
  if (a.n != b.n || a.c != b.c || a.h != b.h || a.w != b.w || a.dt != b.dt) {
    throw std::logic_error(name + ": the two tensors differ in shape or type");
  }
}
}  // namespace

ResidualAdd::ResidualAdd(GpuPlan& plan, std::string name, const Tensor& a, const Tensor& b, bool relu)
    : name_(std::move(name)), relu_(relu), y_(a) {
  require_same(a, b, name_);
  plan.forward(name_, [this, &plan, b]() { kernels::add_relu(y_.data, b.data, y_.count(), relu_, y_.dt, plan.stream()); });
}

Tensor ResidualAdd::backward(GpuPlan& plan, const Tensor& dy) {
  require_same(dy, y_, name_ + ".bwd");
  if (!relu_) return dy;
  Tensor ds = plan.alloc(y_.n, y_.c, y_.h, y_.w, y_.dt);
  plan.backward(name_ + ".bwd", [this, &plan, dy, ds]() {
    kernels::relu_backward(ds.data, dy.data, y_.data, y_.count(), y_.dt, plan.stream());
  });
  return ds;
}

void accumulate_backward(GpuPlan& plan, const std::string& name, const Tensor& into, const Tensor& other) {
  require_same(into, other, name);
  plan.backward(name, [&plan, into, other]() {
    kernels::accumulate(into.data, other.data, into.count(), into.dt, plan.stream());
  });
}

}  // namespace dtbench::gpu
