// Residual networks (He, Zhang, Ren and Sun 2016, "Deep residual learning for image recognition").
//
// CIFAR style, ResNet-(6n+2) for n = 1, 3, 5, 9 (ResNet-8, 20, 32, 56; section 4.2 of the paper):
//   conv 3x3 (16) - BN - ReLU, then three stages of n basic blocks with 16, 32, 64 channels, the first block
//   of stages 2 and 3 with stride 2, then global average pooling and a fully connected layer.
// ImageNet style: conv 7x7/2 (64) - BN - ReLU - max pool 3x3/2, then four stages with 64, 128, 256, 512
//   channels: ResNet-18 has 2, 2, 2, 2 basic blocks, ResNet-50 3, 4, 6, 3 bottleneck blocks (1x1 - 3x3 - 1x1,
//   4x expansion) with the stride on the 3x3 convolution ("v1.5", as torchvision).
// Basic block: y = ReLU(BN(conv3x3(ReLU(BN(conv3x3/s(x))))) + shortcut(x)). Where a block changes the shape,
// the shortcut is a 1x1 convolution with the block's stride followed by BN (the paper's option B); otherwise
// it is the identity. Convolutions have no bias (a BN follows each).
// Each BN but the last of a block is fused with its ReLU; the last BN's output is added to the shortcut in
// place, with the block's ReLU as a post-op of the addition.
#include <map>

#include "workloads/cpu/batch_norm.hpp"
#include "workloads/cpu/conv.hpp"
#include "workloads/cpu/dropout.hpp"
#include "workloads/cpu/global_avg_pool.hpp"
#include "workloads/cpu/linear.hpp"
#include "workloads/cpu/max_pool.hpp"
#include "workloads/cpu/residual_add.hpp"
#include "workloads/models/network.hpp"

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
    static const std::map<std::string, int> cifar_blocks = {
        {"resnet8", 1}, {"resnet20", 3}, {"resnet32", 5}, {"resnet56", 9}};
    std::vector<int> stages, widths;
    bool bottleneck = false;
    imagenet_ = !cifar_blocks.count(spec.arch);
    if (!imagenet_) {
      const int n = cifar_blocks.at(spec.arch);
      stages = {n, n, n};
      widths = {16, 32, 64};
    } else {
      stages = spec.arch == "resnet18" ? std::vector<int>{2, 2, 2, 2} : std::vector<int>{3, 4, 6, 3};
      widths = {64, 128, 256, 512};
      bottleneck = spec.arch == "resnet50";
    }

    int h = spec.in_h, w = spec.in_w;
    auto conv = [&](const std::string& name, cpu::ConvShape s) {
      macs_ += s.macs(h, w);
      return add_conv(layout, name, s);
    };
    const cpu::ConvShape stem = imagenet_ ? cpu::ConvShape{spec.in_c, widths[0], 7, 2, 3, false}
                                          : cpu::ConvShape{spec.in_c, widths[0], 3, 1, 1, false};
    stem_ = conv("conv1", stem);
    stem_bn_ = add_bn(layout, "bn1", widths[0]);
    h = stem.out_size(h), w = stem.out_size(w);
    if (imagenet_) {
      h = pool_.out_size(h), w = pool_.out_size(w);
    }

    int c = widths[0];
    for (size_t i = 0; i < stages.size(); ++i) {
      const int planes = widths[i];
      const int out_c = bottleneck ? 4 * planes : planes;
      for (int j = 0; j < stages[i]; ++j) {
        const int stride = (i > 0 && j == 0) ? 2 : 1;
        const std::string name = "layer" + std::to_string(i + 1) + "." + std::to_string(j);
        Block b;
        const int in_h = h, in_w = w;
        if (bottleneck) {
          b.convs.push_back(conv(name + ".conv1", {c, planes, 1, 1, 0, false}));
          b.bns.push_back(add_bn(layout, name + ".bn1", planes));
          b.convs.push_back(conv(name + ".conv2", {planes, planes, 3, stride, 1, false}));
          b.bns.push_back(add_bn(layout, name + ".bn2", planes));
          h = b.convs.back().shape.out_size(h), w = b.convs.back().shape.out_size(w);
          b.convs.push_back(conv(name + ".conv3", {planes, out_c, 1, 1, 0, false}));
          b.bns.push_back(add_bn(layout, name + ".bn3", out_c));
        } else {
          b.convs.push_back(conv(name + ".conv1", {c, planes, 3, stride, 1, false}));
          b.bns.push_back(add_bn(layout, name + ".bn1", planes));
          h = b.convs.back().shape.out_size(h), w = b.convs.back().shape.out_size(w);
          b.convs.push_back(conv(name + ".conv2", {planes, planes, 3, 1, 1, false}));
          b.bns.push_back(add_bn(layout, name + ".bn2", planes));
        }
        if (stride != 1 || c != out_c) {
          b.downsample = true;
          const cpu::ConvShape ds{c, out_c, 1, stride, 0, false};
          macs_ += ds.macs(in_h, in_w);
          b.down_conv = add_conv(layout, name + ".downsample.0", ds);
          b.down_bn = add_bn(layout, name + ".downsample.1", out_c);
        }
        blocks_.push_back(std::move(b));
        c = out_c;
      }
    }
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
      n.name = b.convs[0].name.substr(0, b.convs[0].name.rfind('.'));
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
