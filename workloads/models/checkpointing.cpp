#include "workloads/models/checkpointing.hpp"

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
  const int n = static_cast<int>(costs.size());
  if (segments < 1 || segments > n)
    throw std::logic_error("segment_of_units: need 1 <= segments <= units, got " + std::to_string(segments) +
                           " segments of " + std::to_string(n) + " units");
  std::vector<double> prefix(size_t(n) + 1, 0.0);
  for (int u = 0; u < n; ++u) prefix[size_t(u) + 1] = prefix[size_t(u)] + costs[size_t(u)];
  auto cost = [&](int m, int i) { return prefix[size_t(i)] - prefix[size_t(m)]; };  // units [m, i)
  const double inf = std::numeric_limits<double>::infinity();
  using Table = std::vector<std::vector<double>>;
  // First the smallest largest-segment cost: worst[j][i] over units [0, i) cut into j segments.
  Table worst(size_t(segments) + 1, std::vector<double>(size_t(n) + 1, inf));
  worst[0][0] = 0.0;
  for (int j = 1; j <= segments; ++j)
    for (int i = j; i <= n; ++i)
      for (int m = j - 1; m < i; ++m)
        worst[size_t(j)][size_t(i)] = std::min(worst[size_t(j)][size_t(i)], std::max(worst[size_t(j) - 1][size_t(m)], cost(m, i)));
  const double limit = worst[size_t(segments)][size_t(n)];
  // Then, among the cuts within that limit, the one with the smallest sum of squared segment costs: the most
  // even one (with equal costs, sizes differing by at most one). squares[j][i] and where its last segment starts.
  Table squares(size_t(segments) + 1, std::vector<double>(size_t(n) + 1, inf));
  std::vector<std::vector<int>> start(size_t(segments) + 1, std::vector<int>(size_t(n) + 1, 0));
  squares[0][0] = 0.0;
  for (int j = 1; j <= segments; ++j) {
    for (int i = j; i <= n; ++i) {
      for (int m = j - 1; m < i; ++m) {
        const double c = cost(m, i);
        if (c > limit || squares[size_t(j) - 1][size_t(m)] == inf) continue;
        const double v = squares[size_t(j) - 1][size_t(m)] + c * c;
        if (v < squares[size_t(j)][size_t(i)]) squares[size_t(j)][size_t(i)] = v, start[size_t(j)][size_t(i)] = m;
      }
    }
  }
  std::vector<int> out(static_cast<size_t>(n));
  for (int j = segments, i = n; j >= 1; --j) {
    const int m = start[size_t(j)][size_t(i)];
    for (int u = m; u < i; ++u) out[size_t(u)] = j - 1;
    i = m;
  }
  return out;
}

}  // namespace dtbench::models
