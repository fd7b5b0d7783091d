#include "workloads/cpu/classifier_head.hpp"

#include "workloads/cpu/dropout.hpp"
#include "workloads/cpu/split_layer.hpp"
#include "workloads/cpu/relu.hpp"

namespace dtbench::cpu {

using dnnl::memory;

ClassifierHead::ClassifierHead(const models::ModelSpec& spec, const models::TableIndex& t, int64_t features,
                               DropoutSource dropout_source)
    : hidden_(spec.hidden),
      classes_(spec.classes),
      shards_(spec.shards),
      shard_(spec.shard),
      dropout_(spec.dropout),
      dropout_source_(dropout_source) {
  const int64_t hidden_rows = models::shard_rows(spec.hidden, shards_, shard_).size();
  const int64_t class_rows = models::shard_rows(spec.classes, shards_, shard_).size();
  fc1_weight_ = t.param("fc1.weight", {hidden_rows, features});
  fc1_bias_ = t.param("fc1.bias", {hidden_rows});
  fc2_weight_ = t.param("fc2.weight", {class_rows, spec.hidden});
  fc2_bias_ = t.param("fc2.bias", {class_rows});
}

ClassifierHead::Built ClassifierHead::build(Plan& plan, const memory& input) const {
  const LayerNode fc1 = fully_connected_layer(plan, "fc1", hidden_, models::shard_rows(hidden_, shards_, shard_),
                                              fc1_weight_, fc1_bias_, input, false);
  Relu* relu = &plan.keep<Relu>(plan, "relu", fc1.y);
  memory x = relu->y();
  Dropout* drop = nullptr;
  if (dropout_ > 0.0f && plan.training()) {
    drop = &plan.keep<Dropout>(plan, "dropout", dropout_, dropout_source_.seed, models::kDropoutStream,
                               dropout_source_.step, x);
    x = drop->y();
  }
  const LayerNode fc2 = fully_connected_layer(plan, "fc2", classes_, models::shard_rows(classes_, shards_, shard_),
                                              fc2_weight_, fc2_bias_, x, true);
  Built out;
  out.logits = fc2.y;
  out.backward = [=](Plan& p, const memory& dlogits, bool need_dx) {
    memory g = fc2.backward(p, dlogits, true);
    if (drop != nullptr) g = drop->backward(p, g);
    g = relu->backward(p, g);
    return fc1.backward(p, g, need_dx);
  };
  return out;
}

}  // namespace dtbench::cpu
