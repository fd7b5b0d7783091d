#include "reducers/fold.hpp"

#include "reducers/exchange.hpp"

namespace dtbench {

int largest_pof2(int p) {
  int q = 1;
  while (q * 2 <= p) q *= 2;
  return q;
}

Fold fold_in(Comm& comm, float* data, size_t count, float* scratch, size_t nseg, int tag) {
  Fold f;
  const int p = comm.size(), me = comm.rank();
  f.pof2 = largest_pof2(p);
  f.rem = p - f.pof2;
  if (me < 2 * f.rem) {
    if (me % 2 == 0) {
      send_segments(comm, me + 1, data, count, nseg, tag);
      f.vrank = -1;
    } else {
      recv_sum_segments(comm, me - 1, data, count, scratch, nseg, tag);
      f.vrank = me / 2;
    }
  } else {
    f.vrank = me - f.rem;
  }
  return f;
}

void fold_out(Comm& comm, const Fold& f, float* data, size_t count, size_t nseg, int tag) {
  const int me = comm.rank();
  if (me >= 2 * f.rem) return;
  if (me % 2 == 1) {
    send_segments(comm, me - 1, data, count, nseg, tag);
  } else {
    // Whole-buffer copy: the segments only bound message sizes here, there is nothing to sum.
    for (size_t k = 0; k < nseg; ++k) {
      size_t b = block_begin(count, nseg, k), e = block_begin(count, nseg, k + 1);
      comm.recv(me + 1, data + b, (e - b) * sizeof(float), tag);
    }
  }
}

}  // namespace dtbench
