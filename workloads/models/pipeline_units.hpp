// Pipeline parallelism (Huang et al. 2019, "GPipe", arXiv 1811.06965; Narayanan et al. 2019, "PipeDream",
// SOSP; workloads/train/pipeline.hpp runs the schedules): the backend-neutral part, where a network is cut.
//
// Terms. A pipeline unit is a run of layers after which exactly one tensor is live, so that a stage boundary may
// fall after it: a ResNet's stem (with its max pooling on the ImageNet archs), each residual block, and its head
// (average pooling, dropout, fc); the Simple CNN's two convolution - ReLU - max pool stages, fc1 with its ReLU
// and dropout, and fc2; the MLP's fc1 (with ReLU and dropout) and fc2. The loss follows the last unit. A stage is
// a run of consecutive units held by one rank of a pipeline group; stage s reads the output of stage s - 1 and its
// backward hands the gradient of that tensor back. A stage holds its units' parameters and batch-norm statistics
// only: the whole model's parameter table is the stages' tables end to end, in stage order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/models/model_spec.hpp"

namespace dtbench::models {

// Pipeline units of the spec's architecture (2 for the mlp, 4 for the simple_cnn, blocks + 2 for a ResNet).
// config/rules.cpp holds the same counts for its early check; tests/workloads compares the two.
int pipeline_units(const ModelSpec& spec);

// The unit that holds layer `layer` (PyTorch's module name, e.g. "layer1.0.conv1", "fc", "bn1"); -1 if none.
int unit_of_layer(const ModelSpec& spec, const std::string& layer);

// Per-image dimensions of the tensor unit u reads: the images (C, H, W) for unit 0, else the previous unit's
// output ({C, H, W} of a feature map, {features} after a fully connected layer). u == pipeline_units(spec): the
// logits, {classes}.
std::vector<int64_t> unit_input_dims(const ModelSpec& spec, int u);

// Whether this rank's stage holds unit u (always without pipeline parallelism), and whether it is the first or last.
bool holds_unit(const ModelSpec& spec, int u);
bool first_stage(const ModelSpec& spec);
bool last_stage(const ModelSpec& spec);

}  // namespace dtbench::models
