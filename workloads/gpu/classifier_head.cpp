#include "workloads/gpu/classifier_head.hpp"

#include "workloads/gpu/activation.hpp"
#include "workloads/gpu/dropout.hpp"
#include "workloads/gpu/linear.hpp"

namespace dtbench::gpu {

ClassifierHead::ClassifierHead(const models::ModelSpec& spec, const TableIndex& t, int64_t features,
                               DropoutSource dropout)
    : hidden_(spec.hidden), classes_(spec.classes), dropout_(spec.dropout), dropout_source_(dropout) {
  fc1_weight_ = t.param("fc1.weight", {spec.hidden, features});
  fc1_bias_ = t.param("fc1.bias", {spec.hidden});
  fc2_weight_ = t.param("fc2.weight", {spec.classes, spec.hidden});
  fc2_bias_ = t.param("fc2.bias", {spec.classes});
}

ClassifierHead::Built ClassifierHead::build(GpuPlan& plan, const Tensor& x) const {
  Linear* fc1 = &plan.keep<Linear>(plan, "fc1", hidden_, fc1_weight_, fc1_bias_, x, false);
  Relu* relu = &plan.keep<Relu>(plan, "relu", fc1->y());
  Tensor h = relu->y();
  Dropout* drop = nullptr;
  if (dropout_ > 0.0f && plan.training()) {
    drop = &plan.keep<Dropout>(plan, "dropout", dropout_, dropout_source_.seed, dropout_source_.position, h);
    h = drop->y();
  }
  Linear* fc2 = &plan.keep<Linear>(plan, "fc2", classes_, fc2_weight_, fc2_bias_, h, true);
  Built out;
  out.logits = fc2->y();
  out.backward = [=](GpuPlan& p, const Tensor& dlogits, bool need_dx) {
    Tensor g = fc2->backward(p, dlogits, true);
    if (drop != nullptr) g = drop->backward(p, g);
    g = relu->backward(p, g);
    return fc1->backward(p, g, need_dx);
  };
  return out;
}

}  // namespace dtbench::gpu
