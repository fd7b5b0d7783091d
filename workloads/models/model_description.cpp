#include "workloads/models/model_description.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "core/error.hpp"

#include "workloads/models/pipeline_units.hpp"
#include "workloads/models/resnet_topology.hpp"

namespace dtbench::models {

size_t ModelDescription::param_count() const { return params.empty() ? 0 : params.back().offset + params.back().size; }
size_t ModelDescription::buffer_count() const {
  return buffers.empty() ? 0 : buffers.back().offset + buffers.back().size;
}

namespace {

// The module a tensor belongs to: "layer1.0.conv1.weight" -> "layer1.0.conv1".
std::string layer_of(const std::string& tensor) { return tensor.substr(0, tensor.rfind('.')); }

// Hands out consecutive ranges of the flat parameter buffer and of the buffer array. With pipeline stages
// (spec.stages > 1) the tensors of units the stage does not hold are counted (init_index) but not added.
class ParamLayout {
 public:
  ParamLayout(ModelDescription& d, const ModelSpec& spec) : d_(d), spec_(spec) {}

  bool holds(const std::string& tensor) const {
    return spec_.stages == 1 || holds_unit(spec_, unit_of_layer(spec_, layer_of(tensor)));
  }

  // Adds the tensor if the stage holds it; returns whether it did.
  bool add_param(std::string name, ParamInfo::Kind kind, std::vector<int64_t> shape) {
    const size_t index = next_index_++;
    if (!holds(name)) return false;
    size_t size = 1;
    for (int64_t n : shape) size *= size_t(n);
    d_.params.push_back(ParamInfo{std::move(name), d_.param_count(), size, kind, std::move(shape)});
    d_.params.back().init_index = index;
    return true;
  }

  // A tensor whose first dimension is a layer's output units (shape[0] of them), of which shard `shard` of
  // `shards` holds the rows `shard_rows` gives (all of them when shards is 1). Returns the rows held (0 for a
  // tensor of another pipeline stage).
  int64_t add_rows(std::string name, ParamInfo::Kind kind, std::vector<int64_t> shape, int shards, int shard) {
    const int64_t rows = shape[0];
    const RowRange r = shard_rows(rows, shards, shard);
    shape[0] = r.size();
    if (!add_param(std::move(name), kind, std::move(shape))) return 0;
    if (shards > 1) d_.params.back().row_begin = r.begin, d_.params.back().full_rows = rows;
    return r.size();
  }

  // A fully connected layer's weight (rows x inputs) and bias; adds its multiply-adds per image, the whole
  // layer's and this shard's.
  void add_fc(const std::string& layer, int64_t rows, int64_t inputs, int shards, int shard) {
    const int64_t own = add_rows(layer + ".weight", ParamInfo::fc_weight, {rows, inputs}, shards, shard);
    add_rows(layer + ".bias", ParamInfo::bias, {rows}, shards, shard);
    d_.macs_per_sample += double(rows) * double(inputs);
    d_.rank_macs_per_sample += double(own) * double(inputs);
    add_output(double(rows));
  }

  void add_output(double floats) {
    d_.layer_output_floats_per_sample += floats;
    d_.largest_layer_output_floats = std::max(d_.largest_layer_output_floats, floats);
  }

  // Weight and bias, then the running mean and variance.
  void add_bn(const TopoBn& bn) {
    const int64_t c = bn.channels;
    if (!add_param(bn.name + ".weight", ParamInfo::bn, {c})) {
      next_index_++;  // the bias
      return;
    }
    add_param(bn.name + ".bias", ParamInfo::bn, {c});
    const size_t offset = d_.buffer_count();
    d_.buffers.push_back(ParamInfo{bn.name + ".running_mean", offset, size_t(c), ParamInfo::bn, {c}});
    d_.buffers.push_back(ParamInfo{bn.name + ".running_var", offset + size_t(c), size_t(c), ParamInfo::bn, {c}});
  }

 private:
  ModelDescription& d_;
  const ModelSpec& spec_;
  size_t next_index_ = 0;  // tensors of the whole model's table so far
};

int out_size(int in, int kernel, int stride, int pad) { return (in + 2 * pad - kernel) / stride + 1; }

ModelDescription describe_resnet(const ModelSpec& spec) {
  ModelDescription d;
  ParamLayout layout(d, spec);
  const ResNetTopology topo = resnet_topology(spec);
  int h = spec.in_h, w = spec.in_w;
  // Parameters in the table's order; MACs of one image's forward pass, following the spatial size.
  auto conv = [&](const TopoConv& c, int& ch, int& cw) {
    const int64_t own = layout.add_rows(c.name + ".weight", ParamInfo::conv_weight, {c.out_c, c.in_c, c.kernel, c.kernel},
                                        spec.shards, spec.shard);
    ch = out_size(ch, c.kernel, c.stride, c.pad), cw = out_size(cw, c.kernel, c.stride, c.pad);
    const double per_row = double(ch) * double(cw) * double(c.in_c) * c.kernel * c.kernel;
    d.macs_per_sample += per_row * c.out_c;
    d.rank_macs_per_sample += per_row * double(own);
    layout.add_output(double(ch) * double(cw) * double(c.out_c));
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
  layout.add_fc("fc", spec.classes, topo.features, spec.shards, spec.shard);
  return d;
}

// x (flattened C x H x W) -> fc1 (hidden) -> ReLU -> [dropout] -> fc2 (classes).
ModelDescription describe_mlp(const ModelSpec& spec) {
  ModelDescription d;
  ParamLayout layout(d, spec);
  const int64_t inputs = int64_t(spec.in_c) * spec.in_h * spec.in_w;
  layout.add_fc("fc1", spec.hidden, inputs, spec.shards, spec.shard);
  layout.add_fc("fc2", spec.classes, spec.hidden, spec.shards, spec.shard);
  return d;
}

// Shallue et al.'s Simple CNN (workloads/cpu/simple_cnn.cpp): x -> conv1 (5x5, same) -> ReLU -> max pool 2x2/2
// -> conv2 (5x5, same) -> ReLU -> max pool 2x2/2 -> fc1 (hidden) -> ReLU -> [dropout] -> fc2 (classes).
ModelDescription describe_simple_cnn(const ModelSpec& spec) {
  ModelDescription d;
  ParamLayout layout(d, spec);
  const int64_t c1 = spec.conv_filters[0], c2 = spec.conv_filters[1];
  const double pixels = double(spec.in_h) * spec.in_w;  // conv1 at full resolution, conv2 after one pool
  // `maps`: the output positions (conv2's map is the pooled one, (H/2) x (W/2), which H x W / 4 overstates for odd
  // sizes; the multiply-adds keep H x W / 4, as recorded).
  auto conv = [&](const std::string& name, int64_t out, int64_t in, double positions, double maps) {
    const int64_t own = layout.add_rows(name + ".weight", ParamInfo::conv_weight, {out, in, 5, 5}, spec.shards, spec.shard);
    layout.add_rows(name + ".bias", ParamInfo::bias, {out}, spec.shards, spec.shard);
    d.macs_per_sample += positions * double(out * in * 25);
    d.rank_macs_per_sample += positions * double(own * in * 25);
    layout.add_output(maps * double(out));
  };
  conv("conv1", c1, spec.in_c, pixels, pixels);
  conv("conv2", c2, c1, pixels / 4, double(spec.in_h / 2) * double(spec.in_w / 2));
  const int64_t features = c2 * (spec.in_h / 4) * (spec.in_w / 4);
  layout.add_fc("fc1", spec.hidden, features, spec.shards, spec.shard);
  layout.add_fc("fc2", spec.classes, spec.hidden, spec.shards, spec.shard);
  return d;
}

}  // namespace

ModelDescription describe(const ModelSpec& spec) {
  validate(spec);
  ModelDescription d = spec.arch == "mlp"          ? describe_mlp(spec)
                       : spec.arch == "simple_cnn" ? describe_simple_cnn(spec)
                                                   : describe_resnet(spec);
  d.partial = spec.stages > 1;
  // Tensor model parallelism: every rank of a group owns at least one output unit of every split layer.
  for (const ParamInfo& p : d.params)
    if (p.full_rows > 0 && p.full_rows < spec.shards)
      throw BadInput("/parallel/model_parallel: a group of " + std::to_string(spec.shards) + " ranks is more than " +
                     p.name + "'s " + std::to_string(p.full_rows) +
                     " output units (each rank owns at least one of every split layer's)");
  return d;
}

}  // namespace dtbench::models
