#include "workloads/cpu/classifier_head.hpp"

#include <optional>

#include "workloads/cpu/dropout.hpp"
#include "workloads/cpu/relu.hpp"
#include "workloads/cpu/split_layer.hpp"
#include "workloads/models/pipeline_units.hpp"

namespace dtbench::cpu {

using dnnl::memory;

ClassifierHead::ClassifierHead(const models::ModelSpec& spec, const models::TableIndex& t, int64_t features,
                               DropoutSource dropout_source, int first_unit)
    : spec_(spec),
      hidden_(spec.hidden),
      classes_(spec.classes),
      shards_(spec.shards),
      shard_(spec.shard),
      first_unit_(first_unit),
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
  const int u1 = first_unit_, u2 = first_unit_ + 1;
  memory x = input;
  std::optional<LayerNode> fc1, fc2;
  Relu* relu = nullptr;
  Dropout* drop = nullptr;
  if (models::holds_unit(spec_, u1)) {
    plan.set_unit(u1);
    fc1 = fully_connected_layer(plan, "fc1", hidden_, models::shard_rows(hidden_, shards_, shard_), fc1_weight_,
                                fc1_bias_, x, false);
    relu = &plan.keep<Relu>(plan, "relu", fc1->y);
    x = relu->y();
    if (dropout_ > 0.0f && plan.training()) {
      drop = &plan.keep<Dropout>(plan, "dropout", dropout_, dropout_source_.seed, dropout_source_.position, x);
      x = drop->y();
    }
  }
  if (models::holds_unit(spec_, u2)) {
    plan.set_unit(u2);
    fc2 = fully_connected_layer(plan, "fc2", classes_, models::shard_rows(classes_, shards_, shard_), fc2_weight_,
                                fc2_bias_, x, true);
    x = fc2->y;
  }
  Built out;
  out.output = x;
  out.backward = [=](Plan& p, const memory& dy, bool need_dx) {
    memory g = dy;
    if (fc2) {
      p.set_unit(u2);
      g = fc2->backward(p, g, fc1.has_value() || need_dx);
    }
    if (fc1) {
      p.set_unit(u1);
      if (drop != nullptr) g = drop->backward(p, g);
      g = relu->backward(p, g);
      g = fc1->backward(p, g, need_dx);
    }
    return g;
  };
  return out;
}

}  // namespace dtbench::cpu
