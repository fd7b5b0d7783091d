// Shallue et al.'s Simple CNN on the GPU backend, the twin of workloads/cpu/simple_cnn.cpp (the model, its source
// and its defaults are described there):
//
//   x N x C x H x W -> conv1 (c1, 5x5, pad 2, bias) -> ReLU -> max pool 2x2/2 -> conv2 (c2, 5x5, pad 2, bias)
//   -> ReLU -> max pool 2x2/2 -> N x c2 x H/4 x W/4 -> fc1 (hidden) -> ReLU -> [dropout] -> fc2 (classes)
//
// No batch norm. Its tensors are looked up by the CPU model's names and shapes (network.hpp), so weights copy
// between the backends; gradient checkpointing, model parallelism and pipeline stages stay on the cpu backend.
#include "workloads/gpu/activation.hpp"
#include "workloads/gpu/conv.hpp"
#include "workloads/gpu/dropout.hpp"
#include "workloads/gpu/linear.hpp"
#include "workloads/gpu/network.hpp"
#include "workloads/gpu/pooling.hpp"

namespace dtbench::gpu {

namespace {

class SimpleCnn : public Network {
 public:
  SimpleCnn(const models::ModelSpec& spec, const TableIndex& t, DropoutSource dropout)
      : conv1_{spec.in_c, spec.conv_filters[0], 5, 1, 2},
        conv2_{spec.conv_filters[0], spec.conv_filters[1], 5, 1, 2},
        hidden_(spec.hidden),
        classes_(spec.classes),
        dropout_(spec.dropout),
        dropout_source_(dropout) {
    conv1_weight_ = t.param("conv1.weight", {conv1_.out_c, conv1_.in_c, 5, 5});
    conv1_bias_ = t.param("conv1.bias", {conv1_.out_c});
    conv2_weight_ = t.param("conv2.weight", {conv2_.out_c, conv2_.in_c, 5, 5});
    conv2_bias_ = t.param("conv2.bias", {conv2_.out_c});
    const int64_t features = int64_t(conv2_.out_c) * (spec.in_h / 4) * (spec.in_w / 4);
    fc1_weight_ = t.param("fc1.weight", {spec.hidden, features});
    fc1_bias_ = t.param("fc1.bias", {spec.hidden});
    fc2_weight_ = t.param("fc2.weight", {spec.classes, spec.hidden});
    fc2_bias_ = t.param("fc2.bias", {spec.classes});
  }

  BuiltNetwork build(GpuPlan& plan, const Tensor& input) const override {
    const PoolShape pool{2, 2, 0};
    Conv* conv1 = &plan.keep<Conv>(plan, "conv1", conv1_, conv1_weight_, input, conv1_bias_);
    Relu* relu1 = &plan.keep<Relu>(plan, "relu1", conv1->y());
    Pooling* pool1 = &Pooling::max(plan, "pool1", pool, relu1->y());
    Conv* conv2 = &plan.keep<Conv>(plan, "conv2", conv2_, conv2_weight_, pool1->y(), conv2_bias_);
    Relu* relu2 = &plan.keep<Relu>(plan, "relu2", conv2->y());
    Pooling* pool2 = &Pooling::max(plan, "pool2", pool, relu2->y());
    Linear* fc1 = &plan.keep<Linear>(plan, "fc1", hidden_, fc1_weight_, fc1_bias_, pool2->y(), false);
    Relu* relu3 = &plan.keep<Relu>(plan, "relu", fc1->y());
    Tensor x = relu3->y();
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
      g = relu3->backward(p, g);
      g = fc1->backward(p, g, true);
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
  int hidden_, classes_;
  float dropout_;
  DropoutSource dropout_source_;
  size_t conv1_weight_ = 0, conv1_bias_ = 0, conv2_weight_ = 0, conv2_bias_ = 0;
  size_t fc1_weight_ = 0, fc1_bias_ = 0, fc2_weight_ = 0, fc2_bias_ = 0;
};

}  // namespace

std::unique_ptr<Network> make_simple_cnn(const models::ModelSpec& spec, const TableIndex& table,
                                         DropoutSource dropout) {
  return std::make_unique<SimpleCnn>(spec, table, dropout);
}

}  // namespace dtbench::gpu
