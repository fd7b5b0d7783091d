// The layers of a residual network, independent of the backend that builds them: names (PyTorch's, in the
// order of named_parameters()), channels, kernels and strides. workloads/cpu/resnet.cpp (oneDNN) and
// workloads/gpu/resnet.cpp (cuDNN) both build from this one description, so the two cannot drift apart.
//
// He, Zhang, Ren and Sun 2016. CIFAR style, ResNet-(6n+2) for n = 1, 3, 5, 9 (ResNet-8, 20, 32, 56): conv 3x3
// (16) - BN - ReLU, three stages of n basic blocks with 16, 32, 64 channels, stride 2 in the first block of
// stages 2 and 3. ImageNet style: conv 7x7/2 (64) - BN - ReLU - max pool 3x3/2, four stages with 64, 128,
// 256, 512 channels; ResNet-18 has 2, 2, 2, 2 basic blocks, ResNet-50 3, 4, 6, 3 bottleneck blocks (1x1 -
// 3x3 - 1x1, 4x expansion, the stride on the 3x3: "v1.5", as torchvision). A block whose shape changes has a
// 1x1 convolution with the block's stride and a BN on its shortcut (option B). Convolutions have no bias.
#pragma once

#include <string>
#include <vector>

#include "workloads/models/model_spec.hpp"

namespace dtbench::models {

struct TopoConv {
  std::string name;  // e.g. "layer2.0.conv1"; its weight is name + ".weight"
  int in_c = 0, out_c = 0, kernel = 3, stride = 1, pad = 0;
};

struct TopoBn {
  std::string name;  // e.g. "layer2.0.bn1"; weight, bias and running statistics under this name
  int channels = 0;
};

struct TopoBlock {
  std::string name;             // e.g. "layer2.0"
  std::vector<TopoConv> convs;  // 2 (basic) or 3 (bottleneck), convs[i] followed by bns[i]
  std::vector<TopoBn> bns;
  bool downsample = false;      // the shortcut is down_conv then down_bn, else the identity
  TopoConv down_conv;
  TopoBn down_bn;
};

struct ResNetTopology {
  bool imagenet = false;  // 7x7/2 stem followed by a 3x3/2 max pool (padding 1)
  TopoConv stem;
  TopoBn stem_bn;
  std::vector<TopoBlock> blocks;
  int features = 0;  // channels into the global average pool and the fully connected layer "fc"
};

// spec.arch must be one of the ResNets (resnet8/20/32/56/18/50).
ResNetTopology resnet_topology(const ModelSpec& spec);

}  // namespace dtbench::models
