#include "workloads/cpu/classifier_head.hpp"

#include "workloads/cpu/dropout.hpp"
#include "workloads/cpu/linear.hpp"
#include "workloads/cpu/parallel_linear.hpp"
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

namespace {

// A fully connected layer whole (Linear) or this rank's output units of it (ParallelLinear).
struct HeadFc {
  memory y;
  std::function<memory(Plan&, const memory& dy, bool need_dx)> backward;
};

HeadFc head_fc(Plan& plan, const std::string& name, int out, int shards, int shard, size_t weight, size_t bias,
                   const memory& x, bool logits) {
  if (shards == 1) {
    Linear* fc = &plan.keep<Linear>(plan, name, out, weight, bias, x, logits);
    return {fc->y(), [fc](Plan& p, const memory& dy, bool need_dx) { return fc->backward(p, dy, need_dx); }};
  }
  ParallelLinear* fc =
      &plan.keep<ParallelLinear>(plan, name, out, models::shard_rows(out, shards, shard), weight, bias, x);
  return {fc->y(), [fc](Plan& p, const memory& dy, bool need_dx) { return fc->backward(p, dy, need_dx); }};
}

}  // namespace

ClassifierHead::Built ClassifierHead::build(Plan& plan, const memory& input) const {
  const HeadFc fc1 = head_fc(plan, "fc1", hidden_, shards_, shard_, fc1_weight_, fc1_bias_, input, false);
  Relu* relu = &plan.keep<Relu>(plan, "relu", fc1.y);
  memory x = relu->y();
  Dropout* drop = nullptr;
  if (dropout_ > 0.0f && plan.training()) {
    drop = &plan.keep<Dropout>(plan, "dropout", dropout_, dropout_source_.seed, models::kDropoutStream,
                               dropout_source_.step, x);
    x = drop->y();
  }
  const HeadFc fc2 = head_fc(plan, "fc2", classes_, shards_, shard_, fc2_weight_, fc2_bias_, x, true);
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
