// The Simple CNN of Shallue et al. 2019 ("Measuring the Effects of Data Parallelism on Neural Network Training",
// JMLR 20(112); arXiv 1811.03600), the model of their MNIST and Fashion-MNIST workloads. Their appendix on the
// models describes it as two convolutional layers, each followed by max pooling, then one fully connected hidden
// layer: 5x5 filters with stride 1 and "same" padding, ReLU activations, 2x2 max pooling with stride 2, and a
// ReLU fully connected layer; it names no batch norm or dropout. The base widths are 32 and 64 filters and 1024
// hidden units (their model-size study also has narrow and wide variants, on MNIST only). The released
// measurements (google-research batch_science, the README's table of workloads) name simple_cnn_base for both
// MNIST and Fashion-MNIST, so Fashion-MNIST used the base widths too: model.conv_filters' and model.hidden's
// defaults. No initialisation is given; ours is PyTorch's default (workloads/models/initialise.cpp).
//
//   x N x C x H x W -> conv1 (c1, 5x5, pad 2) -> ReLU -> max pool 2x2/2 -> conv2 (c2, 5x5, pad 2) -> ReLU
//   -> max pool 2x2/2 -> N x c2 x H/4 x W/4 -> fc1 (hidden) -> ReLU -> [dropout] -> fc2 (classes)
//
// It has no batch norm, so synchronised batch norm changes nothing and zero_init_residual is refused (as for
// the MLP). The layers run unfused (no ReLU post-op on the convolutions): the network is small, and each layer
// is one that the layer tests already check.
#include <optional>

#include "workloads/cpu/classifier_head.hpp"
#include "workloads/cpu/conv.hpp"
#include "workloads/cpu/max_pool.hpp"
#include "workloads/cpu/network.hpp"
#include "workloads/models/checkpointing.hpp"
#include "workloads/models/pipeline_units.hpp"
#include "workloads/cpu/relu.hpp"
#include "workloads/cpu/split_layer.hpp"

namespace dtbench::cpu {

using dnnl::memory;

namespace {

class SimpleCnn : public Network {
 public:
  SimpleCnn(const models::ModelSpec& spec, const models::TableIndex& t, DropoutSource dropout_source)
      : conv1_{spec.in_c, spec.conv_filters[0], 5, 1, 2, true},
        conv2_{spec.conv_filters[0], spec.conv_filters[1], 5, 1, 2, true},
        head_(spec, t, int64_t(spec.conv_filters[1]) * (spec.in_h / 4) * (spec.in_w / 4), dropout_source, 2),
        spec_(spec),
        checkpoint_segments_(spec.checkpoint_segments),
        unit_costs_(models::checkpoint_unit_costs(spec)),
        own1_(models::shard_rows(conv1_.out_c, spec.shards, spec.shard)),
        own2_(models::shard_rows(conv2_.out_c, spec.shards, spec.shard)) {
    conv1_weight_ = t.param("conv1.weight", {own1_.size(), conv1_.in_c, 5, 5});
    conv1_bias_ = t.param("conv1.bias", {own1_.size()});
    conv2_weight_ = t.param("conv2.weight", {own2_.size(), conv2_.in_c, 5, 5});
    conv2_bias_ = t.param("conv2.bias", {own2_.size()});
  }

  BuiltNetwork build(Plan& plan, const memory& input) const override {
    const PoolShape pool{2, 2, 0};
    // Checkpoint units and pipeline units 0 and 1: the two convolution - ReLU - pooling stages; the head is pipeline
    // units 2 and 3.
    const CheckpointSegments segments(plan, unit_costs_, checkpoint_segments_, spec_);
    struct ConvUnit {
      LayerNode conv;
      Relu* relu = nullptr;
      MaxPool* pool = nullptr;
    };
    std::optional<ConvUnit> unit1, unit2;
    memory x = input;
    auto conv_unit = [&](int u, const char* name, const ConvShape& shape, models::RowRange own, size_t weight,
                         size_t bias, std::optional<ConvUnit>& unit) {
      if (!models::holds_unit(spec_, u)) return;
      plan.set_unit(u);
      ConvUnit c{convolution_layer(plan, name, shape, own, weight, bias, x)};
      const std::string n(name);
      c.relu = &plan.keep<Relu>(plan, "relu" + n.substr(4), c.conv.y);
      c.pool = &plan.keep<MaxPool>(plan, "pool" + n.substr(4), pool, c.relu->y());
      x = segments.after_forward(plan, u, c.pool->y());
      unit = std::move(c);
    };
    conv_unit(0, "conv1", conv1_, own1_, conv1_weight_, conv1_bias_, unit1);
    conv_unit(1, "conv2", conv2_, own2_, conv2_weight_, conv2_bias_, unit2);
    const ClassifierHead::Built head = head_.build(plan, x);
    BuiltNetwork out;
    out.output = head.output;
    out.backward = [=, this](Plan& p, const memory& dy) {
      // The head needs dx unless it is the whole stage's first unit on the first stage, which it never is.
      memory g = head.backward(p, dy, true);
      if (unit2) {
        p.set_unit(1);
        g = segments.before_backward(p, 1, g);
        g = unit2->pool->backward(p, g);
        g = unit2->relu->backward(p, g);
        g = unit2->conv.backward(p, g, unit1.has_value() || !models::first_stage(spec_));
      }
      if (unit1) {
        p.set_unit(0);
        g = segments.before_backward(p, 0, g);
        g = unit1->pool->backward(p, g);
        g = unit1->relu->backward(p, g);
        unit1->conv.backward(p, g, false);
        return memory();
      }
      return g;
    };
    return out;
  }

 private:
  ConvShape conv1_, conv2_;
  ClassifierHead head_;
  models::ModelSpec spec_;
  size_t conv1_weight_ = 0, conv1_bias_ = 0, conv2_weight_ = 0, conv2_bias_ = 0;
  int checkpoint_segments_;  // gradient checkpointing (plan.hpp); 0 = off
  std::vector<double> unit_costs_;  // models::checkpoint_unit_costs
  models::RowRange own1_, own2_;    // this rank's output channels (all of them without model parallelism)
};

}  // namespace

std::unique_ptr<Network> make_simple_cnn(const models::ModelSpec& spec, const models::TableIndex& table,
                                         DropoutSource dropout) {
  return std::make_unique<SimpleCnn>(spec, table, dropout);
}

}  // namespace dtbench::cpu
