#include "reducers/halving_doubling.hpp"

#include <algorithm>
#include <cmath>

#include "reducers/exchange.hpp"
#include "reducers/fold.hpp"

namespace dtbench {

void HalvingDoubling::run(float* data, size_t count) {
  Comm& c = comm();
  if (c.size() == 1 || count == 0) return;
  const int tag = kTagHalvingDoubling;
  float* scratch = scratch_.get(std::min(count, max_segment_elems(options_)));

  Fold f = fold_in(c, data, count, scratch, segment_count(count, options_), tag);
  if (f.vrank >= 0) {
    const int P = f.pof2, v = f.vrank;
    auto off = [&](int b) { return block_begin(count, static_cast<size_t>(P), static_cast<size_t>(b)); };
    // Reduce-scatter by recursive halving over the block range [lo, hi).
    int lo = 0, hi = P;
    for (int mask = P / 2; mask >= 1; mask /= 2) {
      const int partner = f.real(v ^ mask), mid = lo + mask;
      const bool lower = (v & mask) == 0;
      const int keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
      const int send_lo = lower ? mid : lo, send_hi = lower ? hi : mid;
      const size_t nkeep = off(keep_hi) - off(keep_lo), nsend = off(send_hi) - off(send_lo);
      const size_t nseg = segment_count(std::max(nkeep, nsend), options_);  // same on both partners
      sendrecv_sum(c, partner, data + off(send_lo), nsend, partner, data + off(keep_lo), nkeep, scratch, nseg,
                   tag);
      lo = keep_lo;
      hi = keep_hi;
    }
    // Allgather by recursive doubling: I hold blocks [base, base+mask), my partner the adjacent range.
    for (int mask = 1; mask < P; mask *= 2) {
      const int partner = f.real(v ^ mask);
      const int mine = v & ~(mask - 1), theirs = mine ^ mask;
      const size_t nmine = off(mine + mask) - off(mine), ntheirs = off(theirs + mask) - off(theirs);
      const size_t nseg = segment_count(std::max(nmine, ntheirs), options_);
      sendrecv_copy(c, partner, data + off(mine), nmine, partner, data + off(theirs), ntheirs, nseg, tag);
    }
  }
  fold_out(c, f, data, count, segment_count(count, options_), tag);
}

CostTerms HalvingDoubling::cost(int p, double n, const ReducerOptions& o, double eager) {
  return cost_terms(p, n, o, eager, true);
}

CostTerms HalvingDoubling::cost_terms(int p, double n, const ReducerOptions& o, double eager, bool segmented) {
  // Rabenseifner (Thakur et al. 2005, section 4.5): 2 lg p alpha + 2 (p-1)/p n beta + (p-1)/p n gamma,
  // plus the fold as in the butterfly. Step j of the halving (and of the doubling) moves n / 2^(j+1) bytes.
  CostTerms t;
  const int pof2 = largest_pof2(p);
  const double Q = pof2, lgQ = std::log2(Q);
  for (int j = 0; j < static_cast<int>(lgQ); ++j) {
    const double part = n / std::ldexp(2.0, j), S = segmented ? segment_messages(part / sizeof(float), o) : 1;
    t.messages(2 * S, part / S, eager);
  }
  t.beta = 2 * (Q - 1) / Q * n;
  t.gamma = (Q - 1) / Q * n;
  if (pof2 != p) {
    const double S = segmented ? segment_messages(n / sizeof(float), o) : 1;
    t.messages(2 * S, n / S, eager);
    t.beta += 2 * n;
    t.gamma += n;
  }
  t.concurrency = folded_concurrency(pof2, 2 * (Q - 1) / Q * n, pof2 != p ? 2 * n : 0);
  return t;
}

}  // namespace dtbench
