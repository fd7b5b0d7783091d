#include "workloads/models/pipeline_units.hpp"

#include <stdexcept>

#include "workloads/models/resnet_topology.hpp"

namespace dtbench::models {

namespace {

int window_out(int in, int kernel, int stride, int pad) { return (in + 2 * pad - kernel) / stride + 1; }

}  // namespace

int pipeline_units(const ModelSpec& spec) {
  if (spec.arch == "mlp") return 2;
  if (spec.arch == "simple_cnn") return 4;
  return 2 + static_cast<int>(resnet_topology(spec).blocks.size());
}

int unit_of_layer(const ModelSpec& spec, const std::string& layer) {
  if (spec.arch == "mlp") return layer == "fc1" ? 0 : layer == "fc2" ? 1 : -1;
  if (spec.arch == "simple_cnn") {
    const char* names[] = {"conv1", "conv2", "fc1", "fc2"};
    for (int u = 0; u < 4; ++u)
      if (layer == names[u]) return u;
    return -1;
  }
  const ResNetTopology t = resnet_topology(spec);
  if (layer == t.stem.name || layer == t.stem_bn.name) return 0;
  for (size_t i = 0; i < t.blocks.size(); ++i)
    if (layer.compare(0, t.blocks[i].name.size() + 1, t.blocks[i].name + ".") == 0) return 1 + static_cast<int>(i);
  return layer == "fc" ? 1 + static_cast<int>(t.blocks.size()) : -1;
}

std::vector<int64_t> unit_input_dims(const ModelSpec& spec, int u) {
  const int units = pipeline_units(spec);
  if (u < 0 || u > units) throw std::logic_error("unit_input_dims: unit " + std::to_string(u) + " out of range");
  if (u == 0) return {spec.in_c, spec.in_h, spec.in_w};
  if (u == units) return {spec.classes};
  if (spec.arch == "mlp") return {spec.hidden};
  if (spec.arch == "simple_cnn") {
    if (u == 3) return {spec.hidden};
    if (u == 1) return {spec.conv_filters[0], spec.in_h / 2, spec.in_w / 2};
    return {spec.conv_filters[1], spec.in_h / 4, spec.in_w / 4};
  }
  // A ResNet: follow the spatial size through the stem and the blocks before u.
  const ResNetTopology t = resnet_topology(spec);
  int h = window_out(spec.in_h, t.stem.kernel, t.stem.stride, t.stem.pad);
  int w = window_out(spec.in_w, t.stem.kernel, t.stem.stride, t.stem.pad);
  if (t.imagenet) h = window_out(h, 3, 2, 1), w = window_out(w, 3, 2, 1);
  int c = t.stem.out_c;
  for (int b = 0; b + 1 < u; ++b) {
    for (const TopoConv& conv : t.blocks[size_t(b)].convs) {
      h = window_out(h, conv.kernel, conv.stride, conv.pad), w = window_out(w, conv.kernel, conv.stride, conv.pad);
      c = conv.out_c;
    }
  }
  return {c, h, w};
}

bool holds_unit(const ModelSpec& spec, int u) {
  return spec.stages == 1 || (u >= spec.first_unit && u < spec.end_unit);
}

bool first_stage(const ModelSpec& spec) { return spec.stages == 1 || spec.first_unit == 0; }
bool last_stage(const ModelSpec& spec) { return spec.stages == 1 || spec.end_unit == pipeline_units(spec); }

}  // namespace dtbench::models
