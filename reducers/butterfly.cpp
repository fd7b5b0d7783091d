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

std::vector<RankBytes> Butterfly::traffic(int p, size_t bytes, const ReducerOptions&) {
  // From run() and the fold (reducers/fold.hpp), p' = largest power of two <= p, r = p - p': each of the
  // lg p' steps swaps the whole buffer S. An even rank below 2r only folds in and out: S each way. An
  // odd rank below 2r adds one S in each direction to the lg p' S of the steps: received (fold in) and
  // sent (fold out). Every other rank: lg p' S each way (Thakur et al. 2005, section 4.1).
  std::vector<RankBytes> out(static_cast<size_t>(p));
  if (p == 1) return out;
  const int pof2 = largest_pof2(p), rem = p - pof2;
  const uint64_t steps = static_cast<uint64_t>(std::log2(pof2));
  for (int i = 0; i < p; ++i) {
    const uint64_t full = i >= 2 * rem ? steps : (i % 2 == 0 ? 1 : steps + 1);
    out[static_cast<size_t>(i)] = {full * bytes, full * bytes};
  }
  return out;
}

}  // namespace dtbench
