// The two-layer perceptron on the GPU backend (workloads/models/mlp.cpp): x (flattened C x H x W) -> fc1
// (hidden) -> ReLU -> [dropout] -> fc2 (classes), the classifier head alone. No batch norm.
#include "workloads/gpu/classifier_head.hpp"
#include "workloads/gpu/network.hpp"

namespace dtbench::gpu {

namespace {

class Mlp : public Network {
 public:
  Mlp(const models::ModelSpec& spec, const TableIndex& t, DropoutSource dropout)
      : head_(spec, t, int64_t(spec.in_c) * spec.in_h * spec.in_w, dropout) {}

  BuiltNetwork build(GpuPlan& plan, const Tensor& input) const override {
    const ClassifierHead::Built head = head_.build(plan, input);
    BuiltNetwork out;
    out.logits = head.logits;
    out.backward = [backward = head.backward](GpuPlan& p, const Tensor& dlogits) { backward(p, dlogits, false); };
    return out;
  }

 private:
  ClassifierHead head_;
};

}  // namespace

std::unique_ptr<Network> make_mlp(const models::ModelSpec& spec, const TableIndex& table, DropoutSource dropout) {
  return std::make_unique<Mlp>(spec, table, dropout);
}

}  // namespace dtbench::gpu
