#include "reducers/tree.hpp"

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

}  // namespace dtbench
