// Residual networks on the oneDNN backend, built from the backend-neutral description (workloads/models:
// resnet_topology.hpp for the layers, the model description's table for the offsets)
// (He et al. 2016: CIFAR-style ResNet-(6n+2), ImageNet-style ResNet-18 and ResNet-50 v1.5).
// Basic block: y = ReLU(BN(conv3x3(ReLU(BN(conv3x3/s(x))))) + shortcut(x)). Each BN but the last of a block is
// fused with its ReLU; the last BN's output is added to the shortcut in place, with the block's ReLU as a
// post-op of the addition.
#include "workloads/cpu/batch_norm.hpp"
#include "workloads/cpu/conv.hpp"
#include "workloads/cpu/dropout.hpp"
#include "workloads/cpu/global_avg_pool.hpp"
#include "workloads/cpu/linear.hpp"
#include "workloads/cpu/max_pool.hpp"
#include "workloads/cpu/network.hpp"
#include "workloads/models/checkpointing.hpp"
#include "workloads/models/pipeline_units.hpp"
#include "workloads/cpu/residual_add.hpp"
#include "workloads/cpu/split_layer.hpp"
#include "workloads/models/resnet_topology.hpp"

namespace dtbench::cpu {

using dnnl::memory;

namespace {

struct ConvParams {
  std::string name;
  ConvShape shape;  // the whole layer's
  models::RowRange own;  // this rank's output channels (all without model parallelism)
  size_t weight = 0, bias = 0;
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

ConvParams conv_params(const models::TableIndex& t, const models::TopoConv& c, const models::ModelSpec& spec) {
  const ConvShape s{c.in_c, c.out_c, c.kernel, c.stride, c.pad, false};
  const models::RowRange own = models::shard_rows(s.out_c, spec.shards, spec.shard);
  return {c.name, s, own, t.param(c.name + ".weight", {own.size(), s.in_c, s.kernel, s.kernel})};
}

BnParams bn_params(const models::TableIndex& t, const models::TopoBn& b) {
  return {b.name, b.channels, t.param(b.name + ".weight", {b.channels}), t.param(b.name + ".bias", {b.channels}),
          t.running_stats(b.name, b.channels)};
}

class ResNet : public Network {
 public:
  ResNet(const models::ModelSpec& spec, const models::TableIndex& t, DropoutSource dropout_source)
      : spec_(spec),
        classes_(spec.classes),
        dropout_(spec.dropout),
        ghost_batch_(spec.ghost_batch),
        checkpoint_segments_(spec.checkpoint_segments),
        unit_costs_(models::checkpoint_unit_costs(spec)),
        dropout_source_(dropout_source) {
    const models::ResNetTopology topo = models::resnet_topology(spec);
    imagenet_ = topo.imagenet;
    stem_ = conv_params(t, topo.stem, spec);
    stem_bn_ = bn_params(t, topo.stem_bn);
    for (const models::TopoBlock& tb : topo.blocks) {
      Block b;
      b.name = tb.name;
      for (size_t i = 0; i < tb.convs.size(); ++i) {
        b.convs.push_back(conv_params(t, tb.convs[i], spec));
        b.bns.push_back(bn_params(t, tb.bns[i]));
      }
      if (tb.downsample) {
        b.downsample = true;
        b.down_conv = conv_params(t, tb.down_conv, spec);
        b.down_bn = bn_params(t, tb.down_bn);
      }
      blocks_.push_back(std::move(b));
    }
    fc_own_ = models::shard_rows(spec.classes, spec.shards, spec.shard);
    fc_weight_ = t.param("fc.weight", {fc_own_.size(), topo.features});
    fc_bias_ = t.param("fc.bias", {fc_own_.size()});
  }

  BuiltNetwork build(Plan& plan, const memory& input) const override {
    auto make_conv = [&](const ConvParams& p, const memory& x) -> LayerNode& {
      return plan.keep<LayerNode>(convolution_layer(plan, p.name, p.shape, p.own, p.weight, p.bias, x));
    };
    auto make_bn = [&](const BnParams& p, bool relu, const memory& x) -> BatchNorm& {
      BatchNormShape shape{p.channels, relu};
      shape.ghost_batch = ghost_batch_;
      return plan.keep<BatchNorm>(plan, p.name, shape, p.gamma, p.beta, p.running, x);
    };

    // Checkpoint and pipeline units: the stem is unit 0, block i unit i + 1; the head (pooling, dropout, fc) is
    // pipeline unit blocks + 1. A pipeline stage builds its own units only.
    const CheckpointSegments segments(plan, unit_costs_, checkpoint_segments_, spec_);
    const int head_unit = 1 + static_cast<int>(blocks_.size());
    auto holds = [this](int u) { return models::holds_unit(spec_, u); };
    memory x = input;
    LayerNode* stem = nullptr;
    BatchNorm* stem_bn = nullptr;
    MaxPool* pool = nullptr;
    if (holds(0)) {
      plan.set_unit(0);
      stem = &make_conv(stem_, input);
      stem_bn = &make_bn(stem_bn_, true, stem->y);
      x = stem_bn->y();
      if (imagenet_) {
        pool = &plan.keep<MaxPool>(plan, "maxpool", pool_, x);
        x = pool->y();
      }
      x = segments.after_forward(plan, 0, x);
    }

    struct BlockNodes {
      std::string name;
      int unit = 0;
      std::vector<LayerNode*> convs;
      std::vector<BatchNorm*> bns;
      LayerNode* down_conv = nullptr;
      BatchNorm* down_bn = nullptr;
      ResidualAdd* add = nullptr;
    };
    std::vector<BlockNodes> nodes;
    for (size_t bi = 0; bi < blocks_.size(); ++bi) {
      const Block& b = blocks_[bi];
      BlockNodes n;
      n.name = b.name;
      n.unit = 1 + static_cast<int>(bi);
      if (!holds(n.unit)) continue;
      plan.set_unit(n.unit);
      memory t = x;
      for (size_t i = 0; i < b.convs.size(); ++i) {
        n.convs.push_back(&make_conv(b.convs[i], t));
        const bool last = i + 1 == b.convs.size();
        n.bns.push_back(&make_bn(b.bns[i], !last, n.convs.back()->y));
        t = n.bns.back()->y();
      }
      memory shortcut = x;
      if (b.downsample) {
        n.down_conv = &make_conv(b.down_conv, x);
        n.down_bn = &make_bn(b.down_bn, false, n.down_conv->y);
        shortcut = n.down_bn->y();
      }
      n.add = &plan.keep<ResidualAdd>(plan, n.name + ".add", t, shortcut, true, true);
      x = segments.after_forward(plan, n.unit, n.add->y());
      nodes.push_back(std::move(n));
    }
    GlobalAvgPool* gap = nullptr;
    Dropout* drop = nullptr;
    LayerNode* fc = nullptr;
    if (holds(head_unit)) {
      plan.set_unit(head_unit);
      gap = &plan.keep<GlobalAvgPool>(plan, "avgpool", x);
      x = gap->y();
      if (dropout_ > 0.0f && plan.training()) {
        drop = &plan.keep<Dropout>(plan, "dropout", dropout_, dropout_source_.seed, dropout_source_.position, x);
        x = drop->y();
      }
      fc = &plan.keep<LayerNode>(fully_connected_layer(plan, "fc", classes_, fc_own_, fc_weight_, fc_bias_, x, true));
      x = fc->y;
    }

    BuiltNetwork out;
    out.output = x;
    out.backward = [=](Plan& p, const memory& dy) {
      memory g = dy;
      if (fc != nullptr) {
        p.set_unit(head_unit);
        g = fc->backward(p, g, true);
        if (drop != nullptr) g = drop->backward(p, g);
        g = gap->backward(p, g);
      }
      for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
        p.set_unit(it->unit);
        g = segments.before_backward(p, it->unit, g);
        // The shortcut's parameters come last in the table: announce them first (decreasing offsets).
        const memory ds = it->add->backward(p, g);
        memory from_shortcut = ds;
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
      if (stem == nullptr) return g;  // a later pipeline stage: the gradient of its input
      p.set_unit(0);
      g = segments.before_backward(p, 0, g);
      if (pool != nullptr) g = pool->backward(p, g);
      g = stem_bn->backward(p, g);
      stem->backward(p, g, false);
      return memory();
    };
    return out;
  }

 private:
  models::ModelSpec spec_;
  int classes_;
  float dropout_;
  int ghost_batch_;  // batch-norm ghost batch (batch_norm.hpp); 0 = none
  int checkpoint_segments_;  // gradient checkpointing (plan.hpp); 0 = off
  std::vector<double> unit_costs_;  // models::checkpoint_unit_costs
  DropoutSource dropout_source_;
  bool imagenet_ = false;
  PoolShape pool_{3, 2, 1};
  ConvParams stem_;
  BnParams stem_bn_;
  std::vector<Block> blocks_;
  models::RowRange fc_own_;  // this rank's classes (all without model parallelism)
  size_t fc_weight_ = 0, fc_bias_ = 0;
};

}  // namespace

std::unique_ptr<Network> make_resnet(const models::ModelSpec& spec, const models::TableIndex& table,
                                     DropoutSource dropout) {
  return std::make_unique<ResNet>(spec, table, dropout);
}

}  // namespace dtbench::cpu
