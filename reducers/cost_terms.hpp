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
  // Counts `count` messages of `bytes` each into the right latency class.
  void messages(double count, double bytes, double eager_bytes) { (bytes <= eager_bytes ? alpha : alpha_rndv) += count; }
};

// An algorithm's formula: the terms of an allreduce of `bytes` on `ranks` ranks (ranks >= 2, bytes > 0).
using CostFormula = CostTerms (*)(int ranks, double bytes, const ReducerOptions& options, double eager_bytes);

// Messages a transfer of `elems` floats is cut into (the reducers' segmenting, reducers/exchange.hpp).
double segment_messages(double elems, const ReducerOptions& options);

}  // namespace dtbench
