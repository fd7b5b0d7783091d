#include "workloads/models/model_description.hpp"

#include <utility>

#include "workloads/models/resnet_topology.hpp"

namespace dtbench::models {

size_t ModelDescription::param_count() const { return params.empty() ? 0 : params.back().offset + params.back().size; }
size_t ModelDescription::buffer_count() const {
  return buffers.empty() ? 0 : buffers.back().offset + buffers.back().size;
}

namespace {

// Hands out consecutive ranges of the flat parameter buffer and of the buffer array.
class ParamLayout {
 public:
  explicit ParamLayout(ModelDescription& d) : d_(d) {}

  void add_param(std::string name, ParamInfo::Kind kind, std::vector<int64_t> shape) {
    size_t size = 1;
    for (int64_t n : shape) size *= size_t(n);
    d_.params.push_back(ParamInfo{std::move(name), d_.param_count(), size, kind, std::move(shape)});
  }

  // A fully connected layer's weight (rows x inputs) and bias, of which shard `shard` of `shards` holds the
  // rows `shard_rows` gives (all of them when shards is 1).
  void add_fc(const std::string& layer, int64_t rows, int64_t inputs, int shards, int shard) {
    const RowRange r = shard_rows(rows, shards, shard);
    add_param(layer + ".weight", ParamInfo::fc_weight, {r.size(), inputs});
    add_param(layer + ".bias", ParamInfo::bias, {r.size()});
    if (shards == 1) return;
    for (size_t i = d_.params.size() - 2; i < d_.params.size(); ++i) d_.params[i].row_begin = r.begin, d_.params[i].full_rows = rows;
  }

  // Weight and bias, then the running mean and variance.
  void add_bn(const TopoBn& bn) {
    const int64_t c = bn.channels;
    add_param(bn.name + ".weight", ParamInfo::bn, {c});
    add_param(bn.name + ".bias", ParamInfo::bn, {c});
    const size_t offset = d_.buffer_count();
    d_.buffers.push_back(ParamInfo{bn.name + ".running_mean", offset, size_t(c), ParamInfo::bn, {c}});
    d_.buffers.push_back(ParamInfo{bn.name + ".running_var", offset + size_t(c), size_t(c), ParamInfo::bn, {c}});
  }

 private:
  ModelDescription& d_;
};

int out_size(int in, int kernel, int stride, int pad) { return (in + 2 * pad - kernel) / stride + 1; }

ModelDescription describe_resnet(const ModelSpec& spec) {
  ModelDescription d;
  ParamLayout layout(d);
  const ResNetTopology topo = resnet_topology(spec);
  int h = spec.in_h, w = spec.in_w;
  // Parameters in the table's order; MACs of one image's forward pass, following the spatial size.
  auto conv = [&](const TopoConv& c, int& ch, int& cw) {
    layout.add_param(c.name + ".weight", ParamInfo::conv_weight, {c.out_c, c.in_c, c.kernel, c.kernel});
    ch = out_size(ch, c.kernel, c.stride, c.pad), cw = out_size(cw, c.kernel, c.stride, c.pad);
    d.macs_per_sample += double(ch) * double(cw) * double(d.params.back().size);
  };
  conv(topo.stem, h, w);
  layout.add_bn(topo.stem_bn);
  if (topo.imagenet) h = out_size(h, 3, 2, 1), w = out_size(w, 3, 2, 1);  // the 3x3/2 max pool
  for (const TopoBlock& b : topo.blocks) {
    int in_h = h, in_w = w;
    for (size_t i = 0; i < b.convs.size(); ++i) {
      conv(b.convs[i], h, w);
      layout.add_bn(b.bns[i]);
    }
    if (b.downsample) {
      conv(b.down_conv, in_h, in_w);
      layout.add_bn(b.down_bn);
    }
  }
  layout.add_param("fc.weight", ParamInfo::fc_weight, {spec.classes, topo.features});
  layout.add_param("fc.bias", ParamInfo::bias, {spec.classes});
  d.macs_per_sample += double(topo.features) * double(spec.classes);
  return d;
}

// x (flattened C x H x W) -> fc1 (hidden) -> ReLU -> [dropout] -> fc2 (classes).
ModelDescription describe_mlp(const ModelSpec& spec) {
  ModelDescription d;
  ParamLayout layout(d);
  const int64_t inputs = int64_t(spec.in_c) * spec.in_h * spec.in_w;
  layout.add_fc("fc1", spec.hidden, inputs, spec.shards, spec.shard);
  layout.add_fc("fc2", spec.classes, spec.hidden, spec.shards, spec.shard);
  d.macs_per_sample = double(inputs) * spec.hidden + double(spec.hidden) * spec.classes;
  return d;
}

// Shallue et al.'s Simple CNN (workloads/cpu/simple_cnn.cpp): x -> conv1 (5x5, same) -> ReLU -> max pool 2x2/2
// -> conv2 (5x5, same) -> ReLU -> max pool 2x2/2 -> fc1 (hidden) -> ReLU -> [dropout] -> fc2 (classes).
ModelDescription describe_simple_cnn(const ModelSpec& spec) {
  ModelDescription d;
  ParamLayout layout(d);
  const int64_t c1 = spec.conv_filters[0], c2 = spec.conv_filters[1];
  layout.add_param("conv1.weight", ParamInfo::conv_weight, {c1, spec.in_c, 5, 5});
  layout.add_param("conv1.bias", ParamInfo::bias, {c1});
  layout.add_param("conv2.weight", ParamInfo::conv_weight, {c2, c1, 5, 5});
  layout.add_param("conv2.bias", ParamInfo::bias, {c2});
  const int64_t features = c2 * (spec.in_h / 4) * (spec.in_w / 4);
  layout.add_fc("fc1", spec.hidden, features, spec.shards, spec.shard);
  layout.add_fc("fc2", spec.classes, spec.hidden, spec.shards, spec.shard);
  const double pixels = double(spec.in_h) * spec.in_w;  // conv1 at full resolution, conv2 after one pool
  d.macs_per_sample = pixels * double(d.params[0].size) + pixels / 4 * double(d.params[2].size) +
                      double(features) * spec.hidden + double(spec.hidden) * spec.classes;
  return d;
}

}  // namespace

ModelDescription describe(const ModelSpec& spec) {
  validate(spec);
  ModelDescription d = spec.arch == "mlp"          ? describe_mlp(spec)
                       : spec.arch == "simple_cnn" ? describe_simple_cnn(spec)
                                                   : describe_resnet(spec);
  d.rank_macs_per_sample = d.macs_per_sample;
  if (spec.shards > 1) {  // the split layers (fc1, fc2) count this shard's rows: a weight's MACs per image are its size
    for (const ParamInfo& p : d.params)
      if (p.kind == ParamInfo::fc_weight)
        d.rank_macs_per_sample -= double(p.size) / double(p.shape[0]) * double(p.full_rows - p.shape[0]);
  }
  return d;
}

}  // namespace dtbench::models
