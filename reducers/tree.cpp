#include "reducers/tree.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "reducers/exchange.hpp"

namespace dtbench {

void Tree::run(float* data, size_t count) {
  Comm& c = comm();
  const int p = c.size(), me = c.rank();
  if (p == 1 || count == 0) return;
  const int left = 2 * me + 1, right = 2 * me + 2, parent = (me - 1) / 2;
  const size_t bytes = count * sizeof(float);
  const int tag = kTagTree;

  // Reduce towards rank 0.
  if (left < p) {
    float* scratch = scratch_.get(count);
    c.recv(left, scratch, bytes, tag);
    sum_into(data, scratch, count);
    if (right < p) {
      c.recv(right, scratch, bytes, tag);
      sum_into(data, scratch, count);
    }
  }
  if (me > 0) c.send(parent, data, bytes, tag);

  // Broadcast from rank 0.
  if (me > 0) c.recv(parent, data, bytes, tag);
  if (left < p) c.send(left, data, bytes, tag);
  if (right < p) c.send(right, data, bytes, tag);
}

namespace {

// The binary heap tree with every message costing one unit: the number of messages on the critical
// path of the reduce (each costs alpha + n beta + n gamma) and of the broadcast (alpha + n beta). A node
// receives its left, then its right child's sum; it sends to its left, then its right child. Exact for
// the heap shape of any p, where "2 log2 p" is only the full-tree value.
//
// A heap's subtree is a heap itself, fixed by its size, and the sizes met from the root are O(log p) (at each
// depth at most one subtree is not full): counted by size, memoised, in O(log^2 p) time and memory, where a pass
// over every rank took 16 bytes per rank (16 GiB for the model's largest batch of 2^30 nodes).
struct TreeDepths {
  double reduce = 0;  // messages until this subtree's root holds its sum
  double bcast = 0;   // messages from this subtree's root receiving the sum until its last node has it
};

TreeDepths tree_depths(int64_t size, std::map<int64_t, TreeDepths>& memo) {
  if (size <= 1) return {};
  if (const auto it = memo.find(size); it != memo.end()) return it->second;
  int64_t full = 1;  // nodes of the levels above the last: 2^h - 1 with 2^h - 1 < size <= 2^(h+1) - 1
  while (2 * full + 1 < size) full = 2 * full + 1;
  const int64_t last = size - full, half = (full + 1) / 2;  // nodes on the last level; its left half's room
  const int64_t left = (full - 1) / 2 + std::min(last, half), right = size - 1 - left;
  const TreeDepths l = tree_depths(left, memo);
  TreeDepths d;
  d.reduce = l.reduce + 1;  // the left child's sum first
  d.bcast = 1 + l.bcast;    // then the left child is sent the sum first
  if (right > 0) {
    const TreeDepths r = tree_depths(right, memo);
    d.reduce = std::max(d.reduce, r.reduce) + 1;
    d.bcast = std::max(d.bcast, 2 + r.bcast);
  }
  memo.emplace(size, d);
  return d;
}

}  // namespace

CostTerms Tree::cost(int p, double n, const ReducerOptions&, double eager) {
  // Reduce then broadcast down a binary tree of depth floor(lg p): about 2 lg p messages each way
  // (the seeds' "2 log2 N"), each a full buffer: exact message counts from tree_depths().
  CostTerms t;
  std::map<int64_t, TreeDepths> memo;
  const TreeDepths depths = tree_depths(p, memo);
  const double up = depths.reduce, down = depths.bcast;
  t.messages(up + down, n, eager);
  t.beta = (up + down) * n;
  t.gamma = up * n;
  // The path is a chain of transfers between a parent and one child at a time (a parent takes its
  // children in turn); the ranks off it wait, yielding their cores.
  t.concurrency = 2;
  return t;
}

std::vector<RankBytes> Tree::traffic(int p, size_t bytes, const ReducerOptions&) {
  // From run(): a rank receives one full buffer from each child and sends one to its parent (reduce),
  // then receives one from its parent and sends one to each child (broadcast): (children + 1) S each
  // way below the root, children x S at the root (2S for p >= 3, the root's 4 buffers in all).
  std::vector<RankBytes> out(static_cast<size_t>(p));
  if (p == 1) return out;
  for (int i = 0; i < p; ++i) {
    const uint64_t links = (2 * i + 1 < p) + (2 * i + 2 < p) + (i > 0);
    out[static_cast<size_t>(i)] = {links * bytes, links * bytes};
  }
  return out;
}

}  // namespace dtbench
