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

#include "reducers/exchange.hpp"
#include "reducers/reducer.hpp"

namespace dtbench {

class HalvingDoubling : public Reducer {
 public:
  HalvingDoubling(Comm& comm, const ReducerOptions& options) : Reducer(comm), options_(options) {}
  ~HalvingDoubling() override { stop_comm_thread(); }
  std::string name() const override { return "halving_doubling"; }
  double bus_factor(int nranks) const override { return allreduce_bus_factor(nranks); }

 protected:
  void run(float* data, size_t count) override;

 private:
  ReducerOptions options_;  // the segmenting rule
  Scratch scratch_;
};

}  // namespace dtbench
