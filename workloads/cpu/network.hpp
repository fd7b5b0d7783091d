// What a model architecture supplies to Model: a build function that appends its layers to a plan. The
// parameter layout is not built here: the architectures look every tensor up by its PyTorch name in the
// model description (workloads/models/model_description.hpp), checking its shape.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "workloads/cpu/plan.hpp"
#include "workloads/models/model_spec.hpp"
#include "workloads/models/table_index.hpp"

namespace dtbench::cpu {

// Where dropout draws its masks: the model's seed and its training-step counter.
struct DropoutSource {
  uint64_t seed = 0;
  const uint64_t* step = nullptr;
};

struct BuiltNetwork {
  dnnl::memory logits;  // N x classes plain fp32
  // Appends the backward of every layer given the gradient of the logits (training plans).
  std::function<void(Plan&, const dnnl::memory& dlogits)> backward;
};

class Network {
 public:
  virtual ~Network() = default;
  // input: N x C x H x W in any layout.
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
