// The coefficients of one allreduce in the alpha-beta-gamma cost model (reducers/cost_model.hpp):
// T = alpha * CostTerms::alpha + alpha_rndv * CostTerms::alpha_rndv + beta * CostTerms::beta
//   + gamma * CostTerms::gamma. Each algorithm computes its own (the static cost() of ring.hpp,
// tree.hpp, ...), reached by name through the registry (reducers/registry.hpp).
#pragma once

#include "reducers/reducer_options.hpp"

namespace dtbench {

struct CostTerms {
  double alpha = 0;       // messages of at most eager_bytes on the critical path
  double alpha_rndv = 0;  // larger messages on the critical path
  double beta = 0;        // bytes sent on the critical path
  double gamma = 0;       // bytes reduced on the critical path
  // Ranks working at once along the critical path: with more of them than cores, they time-share the
  // cores and the path's copies and reductions stretch (cost_model.hpp, oversubscription).
  double concurrency = 0;
  // Counts `count` messages of `bytes` each into the right latency class.
  void messages(double count, double bytes, double eager_bytes) { (bytes <= eager_bytes ? alpha : alpha_rndv) += count; }
};

// An algorithm's formula: the terms of an allreduce of `bytes` on `ranks` ranks (ranks >= 2, bytes > 0).
using CostFormula = CostTerms (*)(int ranks, double bytes, const ReducerOptions& options, double eager_bytes);

// The concurrency of an algorithm that folds p ranks into pof2 (reducers/fold.hpp): its pof2 ranks
// exchange `main_bytes` at once, the fold's pairs move `fold_bytes` with 2 ranks busy; weighted by bytes.
double folded_concurrency(int pof2, double main_bytes, double fold_bytes);

// Messages a transfer of `elems` floats is cut into (the reducers' segmenting, reducers/exchange.hpp).
double segment_messages(double elems, const ReducerOptions& options);

}  // namespace dtbench
