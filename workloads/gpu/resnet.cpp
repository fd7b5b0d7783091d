// The residual networks on the GPU backend, built from the cuDNN and cuBLAS layers and the same
// backend-neutral description as the CPU models (workloads/models/resnet_topology.hpp). Every batch norm but the last of a block is followed by ReLU; the last one's output is
// added to the shortcut in place, with the block's ReLU fused into the addition.
#include <stdexcept>

#include "workloads/gpu/batch_norm.hpp"
#include "workloads/gpu/conv.hpp"
#include "workloads/gpu/dropout.hpp"
#include "workloads/gpu/linear.hpp"
#include "workloads/gpu/network.hpp"
#include "workloads/gpu/pooling.hpp"
#include "workloads/gpu/residual_add.hpp"
#include "workloads/models/model_description.hpp"
#include "workloads/models/resnet_topology.hpp"

namespace dtbench::gpu {

namespace {

struct ConvParams {
  std::string name;
  ConvShape shape;
  size_t weight = 0;
};

struct BnParams {
  std::string name;
  int channels = 0;
  size_t gamma = 0, beta = 0, running = 0;
};

struct Block {
  std::string name;
  std::vector<ConvParams> convs;  // 2 (basic) or 3 (bottleneck)
  std::vector<BnParams> bns;
  bool downsample = false;
  ConvParams down_conv;
  BnParams down_bn;
};

ConvParams conv_params(const TableIndex& t, const std::string& name, const ConvShape& s) {
  return {name, s, t.param(name + ".weight", {s.out_c, s.in_c, s.kernel, s.kernel})};
}

BnParams bn_params(const TableIndex& t, const std::string& name, int channels) {
  return {name, channels, t.param(name + ".weight", {channels}), t.param(name + ".bias", {channels}),
          t.running_stats(name, channels)};
}

class ResNet : public Network {
 public:
  ResNet(const models::ModelSpec& spec, const TableIndex& t, DropoutSource dropout)
      : classes_(spec.classes), dropout_(spec.dropout), dropout_source_(dropout) {
    const models::ResNetTopology topo = models::resnet_topology(spec);
    imagenet_ = topo.imagenet;
    auto conv = [&](const models::TopoConv& tc) {
      return conv_params(t, tc.name, ConvShape{tc.in_c, tc.out_c, tc.kernel, tc.stride, tc.pad});
    };
    auto bn = [&](const models::TopoBn& tb) { return bn_params(t, tb.name, tb.channels); };
    stem_ = conv(topo.stem);
    stem_bn_ = bn(topo.stem_bn);
    for (const models::TopoBlock& tb : topo.blocks) {
      Block b;
      b.name = tb.name;
      for (size_t i = 0; i < tb.convs.size(); ++i) {
        b.convs.push_back(conv(tb.convs[i]));
        b.bns.push_back(bn(tb.bns[i]));
      }
      if (tb.downsample) {
        b.downsample = true;
        b.down_conv = conv(tb.down_conv);
        b.down_bn = bn(tb.down_bn);
      }
      blocks_.push_back(std::move(b));
    }
    const int c = topo.features;
    fc_weight_ = t.param("fc.weight", {spec.classes, c});
    fc_bias_ = t.param("fc.bias", {spec.classes});
  }

  BuiltNetwork build(GpuPlan& plan, const Tensor& input) const override {
    auto make_conv = [&](const ConvParams& p, const Tensor& x) -> Conv& {
      return plan.keep<Conv>(plan, p.name, p.shape, p.weight, x);
    };
    auto make_bn = [&](const BnParams& p, bool relu, const Tensor& x) -> BatchNorm& {
      return plan.keep<BatchNorm>(plan, p.name, BatchNormShape{p.channels, relu}, p.gamma, p.beta, p.running, x);
    };

    Conv* stem = &make_conv(stem_, input);
    BatchNorm* stem_bn = &make_bn(stem_bn_, true, stem->y());
    Tensor x = stem_bn->y();
    Pooling* pool = nullptr;
    if (imagenet_) {
      pool = &Pooling::max(plan, "maxpool", PoolShape{3, 2, 1}, x);
      x = pool->y();
    }

    struct BlockNodes {
      std::string name;
      std::vector<Conv*> convs;
      std::vector<BatchNorm*> bns;
      Conv* down_conv = nullptr;
      BatchNorm* down_bn = nullptr;
      ResidualAdd* add = nullptr;
    };
    std::vector<BlockNodes> nodes;
    for (const Block& b : blocks_) {
      BlockNodes n;
      n.name = b.name;
      Tensor t = x;
      for (size_t i = 0; i < b.convs.size(); ++i) {
        n.convs.push_back(&make_conv(b.convs[i], t));
        const bool last = i + 1 == b.convs.size();
        n.bns.push_back(&make_bn(b.bns[i], !last, n.convs.back()->y()));
        t = n.bns.back()->y();
      }
      Tensor shortcut = x;
      if (b.downsample) {
        n.down_conv = &make_conv(b.down_conv, x);
        n.down_bn = &make_bn(b.down_bn, false, n.down_conv->y());
        shortcut = n.down_bn->y();
      }
      n.add = &plan.keep<ResidualAdd>(plan, n.name + ".add", t, shortcut, true);
      x = n.add->y();
      nodes.push_back(std::move(n));
    }
    Pooling* gap = &Pooling::global_average(plan, "avgpool", x);
    x = gap->y();
    Dropout* drop = nullptr;
    if (dropout_ > 0.0f && plan.training()) {
      drop = &plan.keep<Dropout>(plan, "dropout", dropout_, dropout_source_.seed, dropout_source_.position, x);
      x = drop->y();
    }
    Linear* fc = &plan.keep<Linear>(plan, "fc", classes_, fc_weight_, fc_bias_, x, true);

    BuiltNetwork out;
    out.logits = fc->y();
    out.backward = [=](GpuPlan& p, const Tensor& dlogits) {
      Tensor g = fc->backward(p, dlogits, true);
      if (drop != nullptr) g = drop->backward(p, g);
      g = gap->backward(p, g);
      for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
        // The shortcut's parameters come last in the table: announce them first (decreasing offsets).
        const Tensor ds = it->add->backward(p, g);
        Tensor from_shortcut = ds;
        if (it->down_conv != nullptr) {
          from_shortcut = it->down_bn->backward(p, ds);
          from_shortcut = it->down_conv->backward(p, from_shortcut, true);
        }
        g = ds;
        for (size_t i = it->convs.size(); i-- > 0;) {
          g = it->bns[i]->backward(p, g);
          g = it->convs[i]->backward(p, g, true);
        }
        accumulate_backward(p, it->name + ".grad_sum", g, from_shortcut);
      }
      if (pool != nullptr) g = pool->backward(p, g);
      g = stem_bn->backward(p, g);
      stem->backward(p, g, false);
    };
    return out;
  }

 private:
  int classes_;
  float dropout_;
  DropoutSource dropout_source_;
  bool imagenet_ = false;
  ConvParams stem_;
  BnParams stem_bn_;
  std::vector<Block> blocks_;
  size_t fc_weight_ = 0, fc_bias_ = 0;
};

}  // namespace

std::unique_ptr<Network> make_resnet(const models::ModelSpec& spec, const TableIndex& table, DropoutSource dropout) {
  return std::make_unique<ResNet>(spec, table, dropout);
}

}  // namespace dtbench::gpu
