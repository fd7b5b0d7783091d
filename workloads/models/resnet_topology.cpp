#include "workloads/models/resnet_topology.hpp"

#include <map>
#include <stdexcept>

namespace dtbench::models {

ResNetTopology resnet_topology(const ModelSpec& spec) {
  static const std::map<std::string, int> cifar_blocks = {{"resnet8", 1}, {"resnet20", 3}, {"resnet32", 5}, {"resnet56", 9}};
  ResNetTopology t;
  std::vector<int> stages, widths;
  bool bottleneck = false;
  t.imagenet = !cifar_blocks.count(spec.arch);
  if (!t.imagenet) {
    const int n = cifar_blocks.at(spec.arch);
    stages = {n, n, n};
    widths = {16, 32, 64};
  } else if (spec.arch == "resnet18" || spec.arch == "resnet50") {
    stages = spec.arch == "resnet18" ? std::vector<int>{2, 2, 2, 2} : std::vector<int>{3, 4, 6, 3};
    widths = {64, 128, 256, 512};
    bottleneck = spec.arch == "resnet50";
  } else {
    throw std::logic_error("resnet_topology: " + spec.arch + " is not a ResNet");
  }
  t.stem = t.imagenet ? TopoConv{"conv1", spec.in_c, widths[0], 7, 2, 3} : TopoConv{"conv1", spec.in_c, widths[0], 3, 1, 1};
  t.stem_bn = {"bn1", widths[0]};
  int c = widths[0];
  for (size_t i = 0; i < stages.size(); ++i) {
    const int planes = widths[i];
    const int out_c = bottleneck ? 4 * planes : planes;
    for (int j = 0; j < stages[i]; ++j) {
      const int stride = (i > 0 && j == 0) ? 2 : 1;
      TopoBlock b;
      b.name = "layer" + std::to_string(i + 1) + "." + std::to_string(j);
      auto add = [&](const char* conv, const char* bn, int in, int out, int kernel, int s, int pad) {
        b.convs.push_back({b.name + conv, in, out, kernel, s, pad});
        b.bns.push_back({b.name + bn, out});
      };
      if (bottleneck) {
        add(".conv1", ".bn1", c, planes, 1, 1, 0);
        add(".conv2", ".bn2", planes, planes, 3, stride, 1);
        add(".conv3", ".bn3", planes, out_c, 1, 1, 0);
      } else {
        add(".conv1", ".bn1", c, planes, 3, stride, 1);
        add(".conv2", ".bn2", planes, planes, 3, 1, 1);
      }
      if (stride != 1 || c != out_c) {
        b.downsample = true;
        b.down_conv = {b.name + ".downsample.0", c, out_c, 1, stride, 0};
        b.down_bn = {b.name + ".downsample.1", out_c};
      }
      t.blocks.push_back(std::move(b));
      c = out_c;
    }
  }
  t.features = c;
  return t;
}

}  // namespace dtbench::models
