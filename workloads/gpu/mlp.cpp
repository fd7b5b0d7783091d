// The two-layer perceptron on the GPU backend (workloads/models/mlp.cpp): x (flattened C x H x W) -> fc1
// (hidden) -> ReLU -> [dropout] -> fc2 (classes). No batch norm.
#include "workloads/gpu/activation.hpp"
#include "workloads/gpu/dropout.hpp"
#include "workloads/gpu/linear.hpp"
#include "workloads/gpu/network.hpp"
#include "workloads/models/model_description.hpp"

namespace dtbench::gpu {

namespace {

class Mlp : public Network {
 public:
  Mlp(const models::ModelSpec& spec, const TableIndex& t, DropoutSource dropout)
      : hidden_(spec.hidden), classes_(spec.classes), dropout_(spec.dropout), dropout_source_(dropout) {
    const int64_t inputs = int64_t(spec.in_c) * spec.in_h * spec.in_w;
    fc1_weight_ = t.param("fc1.weight", {spec.hidden, inputs});
    fc1_bias_ = t.param("fc1.bias", {spec.hidden});
    fc2_weight_ = t.param("fc2.weight", {spec.classes, spec.hidden});
    fc2_bias_ = t.param("fc2.bias", {spec.classes});
  }

  BuiltNetwork build(GpuPlan& plan, const Tensor& input) const override {
    Linear* fc1 = &plan.keep<Linear>(plan, "fc1", hidden_, fc1_weight_, fc1_bias_, input, false);
    Relu* relu = &plan.keep<Relu>(plan, "relu", fc1->y());
    Tensor x = relu->y();
    Dropout* drop = nullptr;
    if (dropout_ > 0.0f && plan.training()) {
      drop = &plan.keep<Dropout>(plan, "dropout", dropout_, dropout_source_.seed, dropout_source_.position, x);
      x = drop->y();
    }
    Linear* fc2 = &plan.keep<Linear>(plan, "fc2", classes_, fc2_weight_, fc2_bias_, x, true);
    BuiltNetwork out;
    out.logits = fc2->y();
    out.backward = [=](GpuPlan& p, const Tensor& dlogits) {
      Tensor g = fc2->backward(p, dlogits, true);
      if (drop != nullptr) g = drop->backward(p, g);
      g = relu->backward(p, g);
      fc1->backward(p, g, false);
    };
    return out;
  }

 private:
  int hidden_, classes_;
  float dropout_;
  DropoutSource dropout_source_;
  size_t fc1_weight_ = 0, fc1_bias_ = 0, fc2_weight_ = 0, fc2_bias_ = 0;
};

}  // namespace

std::unique_ptr<Network> make_mlp(const models::ModelSpec& spec, const TableIndex& table, DropoutSource dropout) {
  return std::make_unique<Mlp>(spec, table, dropout);
}

}  // namespace dtbench::gpu
