#include "reducers/butterfly.hpp"

#include <algorithm>
#include <cmath>

#include "reducers/exchange.hpp"
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

CostTerms Butterfly::cost(int p, double n, const ReducerOptions& o, double eager) {
  // Recursive doubling (Thakur et al. 2005): lg p (alpha + n beta + n gamma), plus, for a
  // non-power-of-two p, the fold: one full buffer in (reduced) and one out (section 4.1).
  CostTerms t;
  const int pof2 = largest_pof2(p);
  const double lgQ = std::log2(static_cast<double>(pof2));
  const bool folded = pof2 != p;
  const double S = segment_messages(n / sizeof(float), o);
  t.messages((lgQ + (folded ? 2 : 0)) * S, n / S, eager);
  t.beta = lgQ * n + (folded ? 2 * n : 0);
  t.gamma = lgQ * n + (folded ? n : 0);
  t.concurrency = folded_concurrency(pof2, lgQ * n, folded ? 2 * n : 0);
  return t;
}

}  // namespace dtbench
