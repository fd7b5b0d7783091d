// Data parallelism against tensor model parallelism and pipeline stages for a stack of fully connected layers on K ranks (issue 17;
// the seeds: data parallelism for models with few weights, model parallelism for huge ones), from the same cost
// terms as the batch split (batch_split.hpp): a network's alpha, beta and gamma.
//
// Terms: layers of widths w_0 (inputs), w_1, ..., w_L (outputs); layer l maps I_l = w_{l-1} inputs to O_l = w_l
// outputs and has P_l = (I_l + 1) O_l weights (with its bias); P = sum P_l. Global batch B, t_img the forward and
// backward of one image by the whole stack on one rank.
//
//   compute = B t_img / K                      either way: the same multiply-adds split K ways (DP: B/K images of
//                                              every unit; MP: every image, 1/K of the units)
//   DP comm = T_reducer(K, 4 P)                the allreduce of every gradient (the reducer's cost formula)
//   DP step = compute + max(0, DP comm - backward_share x compute)     overlapped with backward (batch_split.hpp)
//   MP comm = sum_l AG(K, 4 B O_l)             layer l's outputs gathered (workloads/cpu/split_layer.hpp's forward)
//           + sum_{l>1} GS(K, 4 B I_l)         its input gradient summed over the K partial sums (split_layer's
//                                              backward; the first layer needs none):
//   GS(2, n) = AG(2, 2n) + n gamma              K = 2: both partial sums gathered, then summed
//   GS(K, n) = 2 AG(K, n) + (K-1)/K n gamma     K > 2: reduce-scatter (an alltoall of blocks of n/K, the same
//                                              terms as AG(K, n), and K blocks summed) and the sums allgathered
//   AG(K, n) = (K-1) alpha + (K-1)/K n beta     a ring allgather of n bytes in all, K-1 messages of n/K on the path
//   MP step = compute + MP comm                 the exchanges sit between layers: nothing overlaps them
// Pipeline (PP: one pipeline of K stages, M micro-batches; Huang et al. 2019, workloads/train/pipeline.hpp): the
// layers cut into K stages of balanced multiply-adds (core/linear_partition.hpp), stage s computing
// C_s = B t_img MAC_s / MAC per step; after stage s a micro-batch's activation, 4 (B/M) w_s bytes, crosses to the
// next stage in x_s = one message (alpha) + 4 (B/M) w_s beta, and its gradient comes back alike.
//   PP step = (M + K - 1) max(C_max / M, x_max) + 2 sum_s x_s
//                                                the schedule's M + K - 1 slots, each the slowest stage's micro-batch
//                                                (or the slowest link's, when it is slower), plus the first
//                                                micro-batch's way forward and the last one's way back
// This is 1F1B's steady state (the default schedule), where a slot holds one forward and one backward and sends one
// message each way. GPipe's forward phase sends M messages while computing forwards only: where the link is slower
// than a micro-batch's forward but faster than its forward and backward, the link paces it and this formula
// under-predicts its step (by up to 2x as x approaches (f + b) / M).
//   PP comm = 2 sum_s x_s + (M + K - 1) max(0, x_max - C_max / M)    the transfers not hidden behind compute
//   PP idle = (M + K - 1) C_max / M - B t_img / K                      the bubble and the stages' imbalance
// PP is possible for K <= L layers and M <= B.
// Not modelled: the optimizer step (MP's is 1/K of DP's), the loss and activations' element-wise layers, memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "reducers/cost_model.hpp"

namespace dtbench {

struct ParallelismInput {
  std::vector<int64_t> widths;   // w_0 (inputs), ..., w_L (outputs): at least one layer
  int global_batch = 0;          // B
  double seconds_per_image = 0;  // t_img
  double backward_share = 2.0 / 3.0;
  std::string reducer = "ring";  // data parallelism's reducer (a cost formula in reducers/registry.hpp)
  CostParams link;
  // As BatchSplitInput's: hierarchical's link within a node of options.ranks_per_node ranks. The model-parallel
  // group's and the pipeline's exchanges use it too when their K ranks fit in one node.
  std::optional<CostParams> intra_link;
  ReducerOptions options;
  double eager_bytes = kDefaultEagerBytes;
  int micro_batches = 0;  // the pipeline's M; 0: 4 K (GPipe's advice, M >= 4 K), at most B
};

struct ParallelismRow {
  int ranks = 0;
  double compute_s = 0;
  double dp_comm_s = 0, dp_step_s = 0;
  double mp_comm_s = 0, mp_step_s = 0;
  int micro_batches = 0;  // PP's M
  double pp_comm_s = 0, pp_idle_s = 0, pp_step_s = 0;
  bool dp_possible = true;  // K <= B: every replica holds at least one image
  bool mp_possible = true;  // K <= every layer's outputs: every rank holds at least one unit
  bool pp_possible = true;  // K <= layers, M <= B
  // The fastest of the possible ones: "data", "model" (tensor), "pipeline", or "none".
  std::string faster() const;
};

struct ParallelismChoice {
  ParallelismInput input;
  double weights = 0;  // P
  std::vector<ParallelismRow> rows;
  Json to_json() const;
};

// MP comm on K ranks alone (the formula above), for the tests and the table.
double model_parallel_comm_seconds(const ParallelismInput& input, int ranks);

// PP step on K ranks alone (the formula above), with its comm and idle parts.
struct PipelineCost {
  double step_s = 0, comm_s = 0, idle_s = 0;
  int micro_batches = 0;
  std::vector<int> stage_of_layer;
};
PipelineCost pipeline_cost(const ParallelismInput& input, int ranks);

// One row per rank count (each >= 2). BadInput for fewer than two widths or a width < 1, a batch or a figure
// that is not > 0, or a reducer without a cost formula.
ParallelismChoice choose_parallelism(const ParallelismInput& input, const std::vector<int>& ranks);

}  // namespace dtbench
