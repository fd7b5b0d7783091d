// Residual networks on the oneDNN backend, built from the backend-neutral description in resnet_topology.hpp
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
#include "workloads/cpu/residual_add.hpp"
#include "workloads/models/network.hpp"
#include "workloads/models/resnet_topology.hpp"

namespace dtbench::models {

using dnnl::memory;

namespace {

struct ConvParams {
  std::string name;
  cpu::ConvShape shape;
  size_t weight = 0, bias = 0;
};

struct BnParams {
  std::string name;
  int channels = 0;
  size_t gamma = 0, beta = 0, running = 0;
  size_t gamma_index = 0;  // in the parameter table
};

struct Block {
  std::string name;
  std::vector<ConvParams> convs;  // 2 (basic) or 3 (bottleneck)
  std::vector<BnParams> bns;
  bool downsample = false;
  ConvParams down_conv;
  BnParams down_bn;
};

ConvParams add_conv(ParamLayout& layout, const std::string& name, const cpu::ConvShape& s) {
  ConvParams c{name, s};
  c.weight = layout.add_param(name + ".weight", ParamInfo::conv_weight, {s.out_c, s.in_c, s.kernel, s.kernel});
  if (s.bias) c.bias = layout.add_param(name + ".bias", ParamInfo::bias, {s.out_c});
  return c;
}

BnParams add_bn(ParamLayout& layout, const std::string& name, int channels) {
  BnParams b{name, channels};
  b.gamma_index = layout.params().size();
  b.gamma = layout.add_param(name + ".weight", ParamInfo::bn, {channels});
  b.beta = layout.add_param(name + ".bias", ParamInfo::bn, {channels});
  b.running = layout.add_running_stats(name, channels);
  return b;
}

class ResNet : public Network {
 public:
  ResNet(const ModelSpec& spec, ParamLayout& layout, DropoutSource dropout_source)
      : classes_(spec.classes), dropout_(spec.dropout), dropout_source_(dropout_source) {
    const ResNetTopology topo = resnet_topology(spec);
    imagenet_ = topo.imagenet;
    int h = spec.in_h, w = spec.in_w;
    // Parameters in the table's order; MACs of one image's forward pass, following the spatial size.
    auto conv = [&](const TopoConv& tc, int& ch, int& cw) {
      const cpu::ConvShape s{tc.in_c, tc.out_c, tc.kernel, tc.stride, tc.pad, false};
      macs_ += s.macs(ch, cw);
      ch = s.out_size(ch), cw = s.out_size(cw);
      return add_conv(layout, tc.name, s);
    };
    auto bn = [&](const TopoBn& tb) { return add_bn(layout, tb.name, tb.channels); };
    stem_ = conv(topo.stem, h, w);
    stem_bn_ = bn(topo.stem_bn);
    if (imagenet_) h = pool_.out_size(h), w = pool_.out_size(w);
    for (const TopoBlock& tb : topo.blocks) {
      Block b;
      b.name = tb.name;
      int in_h = h, in_w = w;
      for (size_t i = 0; i < tb.convs.size(); ++i) {
        b.convs.push_back(conv(tb.convs[i], h, w));
        b.bns.push_back(bn(tb.bns[i]));
      }
      if (tb.downsample) {
        b.downsample = true;
        b.down_conv = conv(tb.down_conv, in_h, in_w);
        b.down_bn = bn(tb.down_bn);
      }
      blocks_.push_back(std::move(b));
    }
    const int c = topo.features;
    fc_weight_ = layout.add_param("fc.weight", ParamInfo::fc_weight, {spec.classes, c});
    fc_bias_ = layout.add_param("fc.bias", ParamInfo::bias, {spec.classes});
    macs_ += double(c) * double(spec.classes);
  }

  double macs_per_sample() const override { return macs_; }

  std::vector<size_t> last_bn_gammas() const override {
    std::vector<size_t> out;
    for (const Block& b : blocks_) out.push_back(b.bns.back().gamma_index);
    return out;
  }

  BuiltNetwork build(cpu::Plan& plan, const memory& input) const override {
    auto make_conv = [&](const ConvParams& p, const memory& x) -> cpu::Conv& {
      return plan.keep<cpu::Conv>(plan, p.name, p.shape, p.weight, p.bias, x);
    };
    auto make_bn = [&](const BnParams& p, bool relu, const memory& x) -> cpu::BatchNorm& {
      return plan.keep<cpu::BatchNorm>(plan, p.name, cpu::BatchNormShape{p.channels, relu}, p.gamma, p.beta,
                                       p.running, x);
    };

    cpu::Conv* stem = &make_conv(stem_, input);
    cpu::BatchNorm* stem_bn = &make_bn(stem_bn_, true, stem->y());
    memory x = stem_bn->y();
    cpu::MaxPool* pool = nullptr;
    if (imagenet_) {
      pool = &plan.keep<cpu::MaxPool>(plan, "maxpool", pool_, x);
      x = pool->y();
    }

    struct BlockNodes {
      std::string name;
      std::vector<cpu::Conv*> convs;
      std::vector<cpu::BatchNorm*> bns;
      cpu::Conv* down_conv = nullptr;
      cpu::BatchNorm* down_bn = nullptr;
      cpu::ResidualAdd* add = nullptr;
    };
    std::vector<BlockNodes> nodes;
    for (const Block& b : blocks_) {
      BlockNodes n;
      n.name = b.name;
      memory t = x;
      for (size_t i = 0; i < b.convs.size(); ++i) {
        n.convs.push_back(&make_conv(b.convs[i], t));
        const bool last = i + 1 == b.convs.size();
        n.bns.push_back(&make_bn(b.bns[i], !last, n.convs.back()->y()));
        t = n.bns.back()->y();
      }
      memory shortcut = x;
      if (b.downsample) {
        n.down_conv = &make_conv(b.down_conv, x);
        n.down_bn = &make_bn(b.down_bn, false, n.down_conv->y());
        shortcut = n.down_bn->y();
      }
      n.add = &plan.keep<cpu::ResidualAdd>(plan, n.name + ".add", t, shortcut, true, true);
      x = n.add->y();
      nodes.push_back(std::move(n));
    }
    cpu::GlobalAvgPool* gap = &plan.keep<cpu::GlobalAvgPool>(plan, "avgpool", x);
    x = gap->y();
    cpu::Dropout* drop = nullptr;
    if (dropout_ > 0.0f && plan.training()) {
      drop = &plan.keep<cpu::Dropout>(plan, "dropout", dropout_, dropout_source_.seed, kDropoutStream,
                                      dropout_source_.step, x);
      x = drop->y();
    }
    cpu::Linear* fc = &plan.keep<cpu::Linear>(plan, "fc", classes_, fc_weight_, fc_bias_, x, true);

    BuiltNetwork out;
    out.logits = fc->y();
    out.backward = [=](cpu::Plan& p, const memory& dlogits) {
      memory g = fc->backward(p, dlogits, true);
      if (drop != nullptr) g = drop->backward(p, g);
      g = gap->backward(p, g);
      for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
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
        cpu::accumulate_backward(p, it->name + ".grad_sum", g, from_shortcut);
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
  cpu::PoolShape pool_{3, 2, 1};
  ConvParams stem_;
  BnParams stem_bn_;
  std::vector<Block> blocks_;
  size_t fc_weight_ = 0, fc_bias_ = 0;
  double macs_ = 0.0;
};

}  // namespace

std::unique_ptr<Network> make_resnet(const ModelSpec& spec, ParamLayout& layout, DropoutSource dropout) {
  return std::make_unique<ResNet>(spec, layout, dropout);
}

}  // namespace dtbench::models
