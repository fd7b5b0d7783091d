// The seeds' batch-split question (shared/seeds/000, quiz 4; issue 13, claim f): a global batch B split
// over N = B / b nodes of per-node batch b. Does the communication of a step hide in its computation?
//
// "Hides" means: the allreduce of the step's gradients, T(N, S) from the reducer's cost formula
// (reducers/cost_terms.hpp) with a network's alpha, beta and gamma, takes no longer than the part of the
// step's compute it can overlap with, backward_share x b x t_img. The window is the backward pass, not
// the whole step: gradients exist only once backward produces them (bucket by bucket, last layer
// first), and the next forward needs the updated weights, so only backward can cover the allreduce
// (dtbench's Reducer overlaps exactly this: README "reducer.overlap"). Backward costs about twice the
// forward's FLOPs (one product for the input gradient and one for the weight gradient per layer), so
// the default share is 2/3. This is optimistic in two ways that a reader should know: the last bucket's
// allreduce cannot start before backward ends, and a device's time per image grows at small batches
// (b x t_img underestimates compute at b = 1) — both move real crossovers, not the verdict's direction.
//
// The crossover is the smallest per-node batch b (powers of two, 1..B) whose window covers T(B/b, S).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "reducers/cost_model.hpp"

namespace dtbench {

struct BatchSplitInput {
  int global_batch = 1024;
  double gradient_bytes = 0;      // S, bytes allreduced per step
  double seconds_per_image = 0;   // t_img: forward + backward of one image on one node
  double backward_share = 2.0 / 3.0;
  std::string reducer = "ring";   // a reducer with a cost formula (reducers/registry.hpp)
  CostParams link;                // alpha, alpha_rndv, beta, gamma of the network
  // hierarchical: the link within a node (options.ranks_per_node ranks), `link` then joins the nodes' leaders;
  // none: `link` everywhere (allreduce_seconds, reducers/cost_model.hpp)
  std::optional<CostParams> intra_link;
  ReducerOptions options = unsegmented_options();
  double eager_bytes = kDefaultEagerBytes;

  // A published network's messages are whole transfers, not dtbench's 1 MiB segments.
  static ReducerOptions unsegmented_options();
};

struct BatchSplitRow {
  int nodes = 0, per_node = 0;
  double compute_s = 0;  // b x t_img
  double window_s = 0;   // backward_share x compute_s
  double comm_s = 0;     // T(N, S); 0 on one node
  bool hidden = false;   // comm_s <= window_s
};

struct BatchSplit {
  BatchSplitInput input;
  std::vector<BatchSplitRow> rows;  // per-node batch 1, 2, 4, ..., global_batch
  int crossover_per_node = 0;       // the smallest b whose row is hidden
  // The row of per-node batch b; BadInput when b is not one of the rows.
  const BatchSplitRow& row(int per_node) const;
  Json to_json() const;
};

// BadInput when the global batch is not a power of two, a figure is not > 0, or the reducer has no
// cost formula.
BatchSplit batch_split(const BatchSplitInput& input);

}  // namespace dtbench
