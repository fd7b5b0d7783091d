#include "reducers/tree.hpp"

#include <algorithm>
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
void tree_depths(int p, double& reduce_msgs, double& bcast_msgs) {
  std::vector<double> done(static_cast<size_t>(p), 0.0), ready(static_cast<size_t>(p), 0.0);
  for (int i = p - 1; i >= 0; --i) {
    double t = 0;
    for (int child : {2 * i + 1, 2 * i + 2})
      if (child < p) t = std::max(t, done[static_cast<size_t>(child)]) + 1;
    done[static_cast<size_t>(i)] = t;
  }
  bcast_msgs = 0;
  for (int i = 0; i < p; ++i) {
    int k = 0;
    for (int child : {2 * i + 1, 2 * i + 2})
      if (child < p) ready[static_cast<size_t>(child)] = ready[static_cast<size_t>(i)] + (++k);
    bcast_msgs = std::max(bcast_msgs, ready[static_cast<size_t>(i)]);
  }
  reduce_msgs = done[0];
}

}  // namespace

CostTerms Tree::cost(int p, double n, const ReducerOptions&, double eager) {
  // Reduce then broadcast down a binary tree of depth floor(lg p): about 2 lg p messages each way
  // (the seeds' "2 log2 N"), each a full buffer: exact message counts from tree_depths().
  CostTerms t;
  double up = 0, down = 0;
  tree_depths(p, up, down);
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
