// Gradient checkpointing (Chen, Xu, Zhang and Guestrin 2016, "Training Deep Nets with Sublinear Memory Cost",
// arXiv 1604.06174): the backend-neutral part, which networks are cut where.
//
// Terms. A checkpoint unit is a run of layers after which exactly one tensor is live (the network's state
// between units): a ResNet's stem (convolution, batch norm, ReLU, and max pooling on the ImageNet archs) and
// each residual block; the Simple CNN's two convolution - ReLU - max pool stages. The MLP has none (its one
// hidden layer is part of the classifier head). The head (pooling, dropout, fully connected layer, loss) is
// never checkpointed: it is small and its outputs (the logits) are read after the step.
// A segment is a run of consecutive units. A training forward keeps only each segment's output (the
// checkpoint); the backward recomputes a segment's forward from the previous checkpoint just before that
// segment's backward, so at most one segment's activations exist at a time. With n units cut into k segments
// the activation memory is about n/k units (one segment) plus k checkpoints, minimised near k = sqrt(n)
// (Chen et al., section 4.1), the default. One segment recomputes nothing (the last segment's activations are
// still there when its backward starts), so k = 1 is the baseline with the same memory layout.
#pragma once

#include <vector>

#include "workloads/models/model_spec.hpp"

namespace dtbench::models {

// Checkpoint units of the spec's architecture (0 for the mlp). config/rules.cpp holds the same counts for its
// early check; tests/workloads compares the two.
int checkpoint_units(const ModelSpec& spec);

// The default number of segments for n units: round(sqrt(n)), at least 1.
int default_checkpoint_segments(int units);

// The activation size of each unit, in values per image: the outputs of its convolutions, batch norms and
// pooling (fused ReLUs and the in-place residual addition write no tensor of their own). A unit's memory in a plan, forward and
// backward, is about proportional to it; the segments are balanced by it.
std::vector<double> checkpoint_unit_costs(const ModelSpec& spec);

// Segment of each unit when units with these costs are cut into `segments` contiguous, non-empty segments so
// that the largest segment cost is as small as it can be (the linear partition problem, solved exactly by
// dynamic programming), and among those cuts the most even one (the smallest sum of squared segment costs; with
// equal costs the sizes differ by at most one). This is Chen et al.'s aim of equal memory per segment (section
// 4.1) with the cut restricted to unit boundaries. 1 <= segments <= units.
std::vector<int> segment_of_units(const std::vector<double>& costs, int segments);

}  // namespace dtbench::models
