// Binary tree allreduce: a reduce up a binary tree, then a broadcast down it, as separate steps (the
// seeds' "reduction tree", 2 log2 N steps; FireCaffe's reduction tree, Iandola et al. 2016).
//
// Terms: ranks form a binary heap: rank i's children are 2i+1 (left) and 2i+2 (right), its parent
// (i-1)/2, rank 0 is the root; depth floor(log2 p). Reduce: each rank receives its left child's partial
// sum and adds it to its own buffer, then its right child's, then sends the result to its parent, so a
// subtree's sum is (own + left) + right: a fixed order. Broadcast: the root's sum goes down the same
// tree (left child first), so every rank receives the root's bits. Whole buffers per message, as in the
// textbook algorithm: latency 2 floor(log2 p) levels, but the root's link carries 4 full buffers, so
// it is a latency algorithm, not a bandwidth one.
#pragma once

#include "reducers/allreduce.hpp"
#include "reducers/cost_terms.hpp"
#include "reducers/scratch.hpp"
#include "reducers/traffic.hpp"

namespace dtbench {

class Tree : public Allreduce {
 public:
  explicit Tree(Comm& comm) : Allreduce(comm) {}
  std::string name() const override { return "tree"; }
  void run(float* data, size_t count) override;
  // The alpha-beta-gamma terms of one allreduce (reducers/cost_terms.hpp).
  static CostTerms cost(int ranks, double bytes, const ReducerOptions& options, double eager_bytes);
  // The exact bytes each rank sends and receives in one allreduce (reducers/traffic.hpp).
  static std::vector<RankBytes> traffic(int ranks, size_t bytes, const ReducerOptions& options);

 private:
  Scratch scratch_;
};

}  // namespace dtbench
