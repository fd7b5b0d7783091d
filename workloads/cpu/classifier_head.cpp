#include "workloads/cpu/classifier_head.hpp"

#include "workloads/cpu/dropout.hpp"
#include "workloads/cpu/linear.hpp"
#include "workloads/cpu/relu.hpp"

namespace dtbench::cpu {

using dnnl::memory;

ClassifierHead::ClassifierHead(const models::ModelSpec& spec, const models::TableIndex& t, int64_t features,
                               DropoutSource dropout_source)
    : hidden_(spec.hidden), classes_(spec.classes), dropout_(spec.dropout), dropout_source_(dropout_source) {
  fc1_weight_ = t.param("fc1.weight", {spec.hidden, features});
  fc1_bias_ = t.param("fc1.bias", {spec.hidden});
  fc2_weight_ = t.param("fc2.weight", {spec.classes, spec.hidden});
  fc2_bias_ = t.param("fc2.bias", {spec.classes});
}

ClassifierHead::Built ClassifierHead::build(Plan& plan, const memory& input) const {
  Linear* fc1 = &plan.keep<Linear>(plan, "fc1", hidden_, fc1_weight_, fc1_bias_, input, false);
  Relu* relu = &plan.keep<Relu>(plan, "relu", fc1->y());
  memory x = relu->y();
  Dropout* drop = nullptr;
  if (dropout_ > 0.0f && plan.training()) {
    drop = &plan.keep<Dropout>(plan, "dropout", dropout_, dropout_source_.seed, models::kDropoutStream,
                               dropout_source_.step, x);
    x = drop->y();
  }
  Linear* fc2 = &plan.keep<Linear>(plan, "fc2", classes_, fc2_weight_, fc2_bias_, x, true);
  Built out;
  out.logits = fc2->y();
  out.backward = [=](Plan& p, const memory& dlogits, bool need_dx) {
    memory g = fc2->backward(p, dlogits, true);
    if (drop != nullptr) g = drop->backward(p, g);
    g = relu->backward(p, g);
    return fc1->backward(p, g, need_dx);
  };
  return out;
}

}  // namespace dtbench::cpu
