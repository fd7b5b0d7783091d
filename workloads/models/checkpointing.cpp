#include "workloads/models/checkpointing.hpp"

#include "core/linear_partition.hpp"
#include "workloads/models/resnet_topology.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <stdexcept>

namespace dtbench::models {

int checkpoint_units(const ModelSpec& spec) {
  if (spec.arch == "simple_cnn") return 2;
  if (spec.arch == "mlp") return 0;
  return 1 + static_cast<int>(resnet_topology(spec).blocks.size());  // the stem and each residual block
}

int default_checkpoint_segments(int units) {
  return std::max(1, static_cast<int>(std::lround(std::sqrt(static_cast<double>(units)))));
}

std::vector<double> checkpoint_unit_costs(const ModelSpec& spec) {
  // Output side of a convolution or pooling window: floor((n + 2 pad - kernel) / stride) + 1.
  auto out = [](int n, int kernel, int stride, int pad) { return (n + 2 * pad - kernel) / stride + 1; };
  if (spec.arch == "mlp") return {};
  if (spec.arch == "simple_cnn") {
    // conv 5x5 "same", ReLU, max pool 2x2/2, twice: conv and ReLU outputs at full size, the pooled one at a quarter.
    std::vector<double> costs;
    int h = spec.in_h, w = spec.in_w;
    for (int c : spec.conv_filters) {
      costs.push_back(double(c) * h * w * 2.0 + double(c) * (h / 2) * (w / 2));
      h /= 2, w /= 2;
    }
    return costs;
  }
  const ResNetTopology t = resnet_topology(spec);
  int h = out(spec.in_h, t.stem.kernel, t.stem.stride, t.stem.pad), w = out(spec.in_w, t.stem.kernel, t.stem.stride, t.stem.pad);
  double stem = 2.0 * t.stem.out_c * h * w;  // convolution and batch norm
  if (t.imagenet) {
    h = out(h, 3, 2, 1), w = out(w, 3, 2, 1);  // max pool 3x3/2
    stem += double(t.stem.out_c) * h * w;
  }
  std::vector<double> costs{stem};
  for (const TopoBlock& b : t.blocks) {
    double cost = 0.0;
    int bh = h, bw = w;
    for (const TopoConv& c : b.convs) {
      bh = out(bh, c.kernel, c.stride, c.pad), bw = out(bw, c.kernel, c.stride, c.pad);
      cost += 2.0 * c.out_c * bh * bw;  // convolution and batch norm
    }
    if (b.downsample) cost += 2.0 * b.down_conv.out_c * bh * bw;
    // The residual addition writes in place (into the last batch norm's output): no tensor of its own.
    costs.push_back(cost);
    h = bh, w = bw;
  }
  return costs;
}

std::vector<int> segment_of_units(const std::vector<double>& costs, int segments) {
  return linear_partition(costs, segments);
}

}  // namespace dtbench::models
