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
#include "workloads/models/model_spec.hpp"

namespace dtbench::gpu {

// Name -> tensor of the CPU model's parameter and buffer tables.
class TableIndex {
 public:
  TableIndex(const std::vector<models::ParamInfo>& params, const std::vector<models::ParamInfo>& buffers);
  // Offset of the parameter `name`; std::logic_error if it is missing or its shape differs.
  size_t param(const std::string& name, const std::vector<int64_t>& shape) const;
  // Offset of the running mean of batch norm `bn_name` (the variance follows it).
  size_t running_stats(const std::string& bn_name, int64_t channels) const;

 private:
  std::map<std::string, const models::ParamInfo*> params_, buffers_;
};

// Where dropout draws its masks: the model's seed and training-step counter.
struct DropoutSource {
  uint64_t seed = 0;
  const uint64_t* step = nullptr;
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

}  // namespace dtbench::gpu
