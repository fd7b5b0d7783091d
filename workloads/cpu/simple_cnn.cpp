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
#include "workloads/cpu/classifier_head.hpp"
#include "workloads/cpu/conv.hpp"
#include "workloads/cpu/max_pool.hpp"
#include "workloads/cpu/network.hpp"
#include "workloads/models/checkpointing.hpp"
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
        head_(spec, t, int64_t(spec.conv_filters[1]) * (spec.in_h / 4) * (spec.in_w / 4), dropout_source),
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
    // Checkpoint units: the two convolution - ReLU - pooling stages.
    const CheckpointSegments segments(plan, unit_costs_, checkpoint_segments_);
    const LayerNode conv1 = convolution_layer(plan, "conv1", conv1_, own1_, conv1_weight_, conv1_bias_, input);
    Relu* relu1 = &plan.keep<Relu>(plan, "relu1", conv1.y);
    MaxPool* pool1 = &plan.keep<MaxPool>(plan, "pool1", pool, relu1->y());
    const memory x1 = segments.after_forward(plan, 0, pool1->y());
    const LayerNode conv2 = convolution_layer(plan, "conv2", conv2_, own2_, conv2_weight_, conv2_bias_, x1);
    Relu* relu2 = &plan.keep<Relu>(plan, "relu2", conv2.y);
    MaxPool* pool2 = &plan.keep<MaxPool>(plan, "pool2", pool, relu2->y());
    const ClassifierHead::Built head = head_.build(plan, segments.after_forward(plan, 1, pool2->y()));
    BuiltNetwork out;
    out.logits = head.logits;
    out.backward = [=](Plan& p, const memory& dlogits) {
      memory g = head.backward(p, dlogits, true);
      g = segments.before_backward(p, 1, g);
      g = pool2->backward(p, g);
      g = relu2->backward(p, g);
      g = conv2.backward(p, g, true);
      g = segments.before_backward(p, 0, g);
      g = pool1->backward(p, g);
      g = relu1->backward(p, g);
      conv1.backward(p, g, false);
    };
    return out;
  }

 private:
  ConvShape conv1_, conv2_;
  ClassifierHead head_;
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
