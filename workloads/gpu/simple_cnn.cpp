// Shallue et al.'s Simple CNN on the GPU backend, the twin of workloads/cpu/simple_cnn.cpp (the model, its source
// and its defaults are described there):
//
//   x N x C x H x W -> conv1 (c1, 5x5, pad 2, bias) -> ReLU -> max pool 2x2/2 -> conv2 (c2, 5x5, pad 2, bias)
//   -> ReLU -> max pool 2x2/2 -> N x c2 x H/4 x W/4 -> fc1 (hidden) -> ReLU -> [dropout] -> fc2 (classes)
//
// No batch norm. Its tensors are looked up by the CPU model's names and shapes (network.hpp), so weights copy
// between the backends; gradient checkpointing, model parallelism and pipeline stages stay on the cpu backend.
#include "workloads/gpu/activation.hpp"
#include "workloads/gpu/classifier_head.hpp"
#include "workloads/gpu/conv.hpp"
#include "workloads/gpu/network.hpp"
#include "workloads/gpu/pooling.hpp"

namespace dtbench::gpu {

namespace {

class SimpleCnn : public Network {
 public:
  SimpleCnn(const models::ModelSpec& spec, const TableIndex& t, DropoutSource dropout)
      : conv1_{spec.in_c, spec.conv_filters[0], 5, 1, 2},
        conv2_{spec.conv_filters[0], spec.conv_filters[1], 5, 1, 2},
        head_(spec, t, int64_t(spec.conv_filters[1]) * (spec.in_h / 4) * (spec.in_w / 4), dropout) {
    conv1_weight_ = t.param("conv1.weight", {conv1_.out_c, conv1_.in_c, 5, 5});
    conv1_bias_ = t.param("conv1.bias", {conv1_.out_c});
    conv2_weight_ = t.param("conv2.weight", {conv2_.out_c, conv2_.in_c, 5, 5});
    conv2_bias_ = t.param("conv2.bias", {conv2_.out_c});
  }

  BuiltNetwork build(GpuPlan& plan, const Tensor& input) const override {
    const PoolShape pool{2, 2, 0};
    Conv* conv1 = &plan.keep<Conv>(plan, "conv1", conv1_, conv1_weight_, input, conv1_bias_);
    Relu* relu1 = &plan.keep<Relu>(plan, "relu1", conv1->y());
    Pooling* pool1 = &Pooling::max(plan, "pool1", pool, relu1->y());
    Conv* conv2 = &plan.keep<Conv>(plan, "conv2", conv2_, conv2_weight_, pool1->y(), conv2_bias_);
    Relu* relu2 = &plan.keep<Relu>(plan, "relu2", conv2->y());
    Pooling* pool2 = &Pooling::max(plan, "pool2", pool, relu2->y());
    const ClassifierHead::Built head = head_.build(plan, pool2->y());
    BuiltNetwork out;
    out.logits = head.logits;
    out.backward = [=, backward = head.backward](GpuPlan& p, const Tensor& dlogits) {
      Tensor g = backward(p, dlogits, true);
      g = pool2->backward(p, g);
      g = relu2->backward(p, g);
      g = conv2->backward(p, g, true);
      g = pool1->backward(p, g);
      g = relu1->backward(p, g);
      conv1->backward(p, g, false);
    };
    return out;
  }

 private:
  ConvShape conv1_, conv2_;
  ClassifierHead head_;
  size_t conv1_weight_ = 0, conv1_bias_ = 0, conv2_weight_ = 0, conv2_bias_ = 0;
};

}  // namespace

std::unique_ptr<Network> make_simple_cnn(const models::ModelSpec& spec, const TableIndex& table,
                                         DropoutSource dropout) {
  return std::make_unique<SimpleCnn>(spec, table, dropout);
}

}  // namespace dtbench::gpu
