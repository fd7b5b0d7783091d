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

#include "reducers/exchange.hpp"
#include "reducers/reducer.hpp"

namespace dtbench {

class Tree : public Reducer {
 public:
  explicit Tree(Comm& comm) : Reducer(comm) {}
  ~Tree() override { stop_comm_thread(); }
  std::string name() const override { return "tree"; }
  double bus_factor(int nranks) const override { return allreduce_bus_factor(nranks); }

 protected:
  void run(float* data, size_t count) override;

 private:
  Scratch scratch_;
};

}  // namespace dtbench
