// What an architecture supplies to GpuModel (the GPU twin of workloads/models/network.hpp): a build
// function that appends its layers to a plan. The parameter layout is not built here: it is the CPU
// model's table (same names, offsets and shapes), and the architectures look every tensor up by its
// PyTorch name, checking its shape, so the two backends cannot drift apart silently.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "workloads/gpu/plan.hpp"
#include "workloads/models/dropout_mask.hpp"
#include "workloads/models/model_spec.hpp"
#include "workloads/models/table_index.hpp"

namespace dtbench::gpu {

// The layers find their ranges of the flat buffers by name in the neutral description.
using models::TableIndex;

// Where dropout draws its masks (workloads/models/dropout_mask.hpp): the model's seed and the position of its
// next training forward, which the trainer sets.
struct DropoutSource {
  uint64_t seed = 0;
  const models::BatchPosition* position = nullptr;
};

struct BuiltNetwork {
  Tensor logits;  // N x classes fp32
  // Appends the backward of every layer, given the gradient of the logits (training plans).
  std::function<void(GpuPlan&, const Tensor& dlogits)> backward;
};

class Network {
 public:
  virtual ~Network() = default;
  // input: N x C x H x W in the plan's precision.
  virtual BuiltNetwork build(GpuPlan& plan, const Tensor& input) const = 0;
};

std::unique_ptr<Network> make_resnet(const models::ModelSpec& spec, const TableIndex& table, DropoutSource dropout);
std::unique_ptr<Network> make_mlp(const models::ModelSpec& spec, const TableIndex& table, DropoutSource dropout);
std::unique_ptr<Network> make_simple_cnn(const models::ModelSpec& spec, const TableIndex& table,
                                         DropoutSource dropout);

}  // namespace dtbench::gpu
