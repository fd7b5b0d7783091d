// A two-layer perceptron: x (flattened C x H x W) -> fc1 (hidden) -> ReLU -> [dropout] -> fc2 (classes), which is
// the classifier head alone (classifier_head.hpp).
//
// It has no batch norm, so its gradient over a batch of K b images is exactly the average of the gradients of
// K batches of b: the model for checking that data-parallel training on K ranks equals one rank with K times
// the batch.
#include "workloads/cpu/classifier_head.hpp"
#include "workloads/cpu/network.hpp"
#include "workloads/models/pipeline_units.hpp"

namespace dtbench::cpu {

using dnnl::memory;

namespace {

class Mlp : public Network {
 public:
  Mlp(const models::ModelSpec& spec, const models::TableIndex& t, DropoutSource dropout_source)
      : head_(spec, t, int64_t(spec.in_c) * spec.in_h * spec.in_w, dropout_source, 0),
        need_dx_(!models::first_stage(spec)) {}

  BuiltNetwork build(Plan& plan, const memory& input) const override {
    const ClassifierHead::Built head = head_.build(plan, input);
    BuiltNetwork out;
    out.output = head.output;
    out.backward = [=, need_dx = need_dx_](Plan& p, const memory& dy) {
      const memory dx = head.backward(p, dy, need_dx);
      return need_dx ? dx : memory();
    };
    return out;
  }

 private:
  ClassifierHead head_;
  bool need_dx_;  // a pipeline stage after the first: its input's gradient goes to the stage before
};

}  // namespace

std::unique_ptr<Network> make_mlp(const models::ModelSpec& spec, const models::TableIndex& table,
                                  DropoutSource dropout) {
  return std::make_unique<Mlp>(spec, table, dropout);
}

}  // namespace dtbench::cpu
