#include "reducers/butterfly.hpp"

#include <algorithm>

#include "reducers/fold.hpp"

namespace dtbench {

void Butterfly::run(float* data, size_t count) {
  Comm& c = comm();
  if (c.size() == 1 || count == 0) return;
  const int tag = kTagButterfly;
  const size_t nseg = segment_count(count, options_);
  float* scratch = scratch_.get((count + nseg - 1) / nseg);

  Fold f = fold_in(c, data, count, scratch, nseg, tag);
  if (f.vrank >= 0) {
    for (int mask = 1; mask < f.pof2; mask <<= 1) {
      const int partner = f.real(f.vrank ^ mask);
      // Segment k is sent before it is summed into, so send and accumulate may share the buffer.
      sendrecv_sum(c, partner, data, count, partner, data, count, scratch, nseg, tag);
    }
  }
  fold_out(c, f, data, count, nseg, tag);
}

}  // namespace dtbench
