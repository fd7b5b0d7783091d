// The fully connected end of the MLP and of the Simple CNN: x (N x anything, flattened) -> fc1 (hidden) -> ReLU
// -> [dropout] -> fc2 (classes), with the parameters fc1.weight, fc1.bias, fc2.weight, fc2.bias. With tensor model
// parallelism (spec.shards > 1) fc1 and fc2 hold this rank's output units (split_layer.hpp). They are two pipeline
// units: fc1 with its ReLU and dropout, and fc2.
#pragma once

#include <functional>

#include "workloads/cpu/network.hpp"

namespace dtbench::cpu {

class ClassifierHead {
 public:
  struct Built {
    // The logits (N x classes plain fp32); fc1's ReLU (or dropout) output when the stage ends at fc1's unit; the
    // input when the stage holds neither unit.
    dnnl::memory output;
    // Appends the backward of the units built given the gradient of the output; returns dx when need_dx.
    std::function<dnnl::memory(Plan&, const dnnl::memory& dy, bool need_dx)> backward;
  };

  // `features`: the number of inputs per image (fc1's fan-in). first_unit: the pipeline unit of fc1 (fc2's is the
  // next; workloads/models/pipeline_units.hpp).
  ClassifierHead(const models::ModelSpec& spec, const models::TableIndex& t, int64_t features,
                 DropoutSource dropout_source, int first_unit);
  Built build(Plan& plan, const dnnl::memory& x) const;

 private:
  models::ModelSpec spec_;
  int hidden_, classes_, shards_, shard_, first_unit_;
  float dropout_;
  DropoutSource dropout_source_;
  size_t fc1_weight_ = 0, fc1_bias_ = 0, fc2_weight_ = 0, fc2_bias_ = 0;
};

}  // namespace dtbench::cpu
