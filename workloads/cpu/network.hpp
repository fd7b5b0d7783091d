// What a model architecture supplies to Model: a build function that appends its layers to a plan. The
// parameter layout is not built here: the architectures look every tensor up by its PyTorch name in the
// model description (workloads/models/model_description.hpp), checking its shape.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "workloads/cpu/plan.hpp"
#include "workloads/models/dropout_mask.hpp"
#include "workloads/models/model_spec.hpp"
#include "workloads/models/table_index.hpp"

namespace dtbench::cpu {

// Where dropout draws its masks (workloads/models/dropout_mask.hpp): the model's seed and the position of its
// next training forward, which the trainer sets.
struct DropoutSource {
  uint64_t seed = 0;
  const models::BatchPosition* position = nullptr;
};

// Where a network's checkpoint units (workloads/models/checkpointing.hpp) begin and end the plan's segments
// (plan.hpp). Off, every call returning its argument, in evaluation plans and with 0 segments.
class CheckpointSegments {
 public:
  // Begins the first segment: build the first unit next. unit_costs: models::checkpoint_unit_costs, one per unit. A
  // pipeline stage cuts its own checkpoint units only, into at most as many segments as it holds (none: off).
  CheckpointSegments(Plan& plan, const std::vector<double>& unit_costs, int segments, const models::ModelSpec& spec);
  // After unit u's forward, given its output: the tensor unit u + 1 reads (the checkpoint when u ends a segment).
  dnnl::memory after_forward(Plan& plan, int unit, const dnnl::memory& y) const;
  // Before unit u's backward (units in reverse order), given the gradient of its output: the gradient its
  // layers take.
  dnnl::memory before_backward(Plan& plan, int unit, const dnnl::memory& dy) const;

 private:
  bool ends_segment(int unit) const;
  std::vector<int> segment_;  // segment of each unit; empty when off
};

struct BuiltNetwork {
  // The logits (N x classes plain fp32); on a pipeline stage before the last, the output of its last unit.
  dnnl::memory output;
  // Appends the backward of every layer given the gradient of the output (training plans). Returns the gradient
  // of the input on a pipeline stage after the first, else an empty memory.
  std::function<dnnl::memory(Plan&, const dnnl::memory& dy)> backward;
};

class Network {
 public:
  virtual ~Network() = default;
  // input: N x C x H x W in any layout; on a pipeline stage (spec.stages > 1), the input of its first unit
  // (models::unit_input_dims). Builds the units the stage holds (models::holds_unit), each under Plan::set_unit.
  virtual BuiltNetwork build(Plan& plan, const dnnl::memory& input) const = 0;
};

// The architectures (resnet.cpp, mlp.cpp, simple_cnn.cpp). The spec has been validated.
std::unique_ptr<Network> make_resnet(const models::ModelSpec& spec, const models::TableIndex& table,
                                     DropoutSource dropout);
std::unique_ptr<Network> make_mlp(const models::ModelSpec& spec, const models::TableIndex& table,
                                  DropoutSource dropout);
std::unique_ptr<Network> make_simple_cnn(const models::ModelSpec& spec, const models::TableIndex& table,
                                         DropoutSource dropout);

}  // namespace dtbench::cpu
