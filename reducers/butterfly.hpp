// Butterfly allreduce: recursive doubling (the seeds' "butterfly", log2 N steps; Thakur, Rabenseifner
// and Gropp 2005, section 4.1).
//
// Terms: for p a power of two, in step j = 0..log2(p)-1 each rank exchanges its whole buffer with the
// rank whose number differs in bit j and adds what it receives. After log2 p steps every rank holds
// the full sum, with no separate broadcast (half the steps of the tree). The two partners of a step add
// the same two vectors (a + b on one side, b + a on the other; IEEE addition is commutative), so all
// ranks end with the same bits. A non-power-of-two count is folded in first (reducers/fold.hpp): one
// extra full-buffer message before and after. Every step moves the whole buffer, so it suits small
// buffers (latency log2 p alpha) and loses to the ring and halving-doubling on large ones.
#pragma once

#include "reducers/allreduce.hpp"
#include "reducers/cost_terms.hpp"
#include "reducers/scratch.hpp"
#include "reducers/traffic.hpp"

namespace dtbench {

class Butterfly : public Allreduce {
 public:
  Butterfly(Comm& comm, const ReducerOptions& options) : Allreduce(comm), options_(options) {}
  std::string name() const override { return "butterfly"; }
  void run(float* data, size_t count) override;
  // The alpha-beta-gamma terms of one allreduce (reducers/cost_terms.hpp).
  static CostTerms cost(int ranks, double bytes, const ReducerOptions& options, double eager_bytes);
  // The exact bytes each rank sends and receives in one allreduce (reducers/traffic.hpp).
  static std::vector<RankBytes> traffic(int ranks, size_t bytes, const ReducerOptions& options);

 private:
  ReducerOptions options_;  // the segmenting rule
  Scratch scratch_;
};

}  // namespace dtbench
