// Halving-doubling allreduce (Rabenseifner's algorithm; Thakur, Rabenseifner and Gropp 2005,
// section 4.5): a reduce-scatter by recursive halving, then an allgather by recursive doubling.
//
// Terms: p' ranks (a power of two; other counts are folded in first, reducers/fold.hpp), the buffer
// split into p' blocks. Recursive halving, log2 p' steps: the rank keeps one half of its current block
// range and sends the other half to the partner whose rank differs in the current top bit (distance
// p'/2, then p'/4, ...), adding the partner's copy of the kept half (own + incoming: a fixed order).
// Afterwards rank v holds the full sum of block v. Recursive doubling, log2 p' steps in the reverse
// order of distances: partners swap the block ranges they hold, doubling them, copying into place, so
// every rank ends with the same bits. Cost: 2 log2 p' latencies and 2(p'-1)/p' of the buffer per rank:
// the ring's bandwidth with logarithmic latency. Transfers are segmented like the ring's.
#pragma once

#include "reducers/allreduce.hpp"
#include "reducers/cost_terms.hpp"
#include "reducers/scratch.hpp"
#include "reducers/traffic.hpp"

namespace dtbench {

class HalvingDoubling : public Allreduce {
 public:
  HalvingDoubling(Comm& comm, const ReducerOptions& options) : Allreduce(comm), options_(options) {}
  std::string name() const override { return "halving_doubling"; }
  void run(float* data, size_t count) override;
  // The alpha-beta-gamma terms of one allreduce (reducers/cost_terms.hpp).
  static CostTerms cost(int ranks, double bytes, const ReducerOptions& options, double eager_bytes);
  // The exact bytes each rank sends and receives in one allreduce (reducers/traffic.hpp).
  static std::vector<RankBytes> traffic(int ranks, size_t bytes, const ReducerOptions& options);
  // The same formula with or without the segmenting of the transfers (MpiReducer's model has none).
  static CostTerms cost_terms(int ranks, double bytes, const ReducerOptions& options, double eager_bytes,
                              bool segmented);

 private:
  ReducerOptions options_;  // the segmenting rule
  Scratch scratch_;
};

}  // namespace dtbench
