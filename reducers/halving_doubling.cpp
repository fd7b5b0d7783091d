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

std::vector<RankBytes> HalvingDoubling::traffic(int p, size_t bytes, const ReducerOptions&) {
  // From run(), p' = largest power of two <= p, blocks b of p' (B(b) its first element) and virtual
  // rank v. Halving: v sends the half it gives away, every block but v in all, and receives the half it
  // keeps: the aligned range of m blocks holding v, for m = p'/2, ..., 2, 1. Doubling sends those same
  // ranges and receives the rest: so each way, (S - L(v)) + sum over m of the bytes of blocks
  // [a_m, a_m + m), a_m = v rounded down to a multiple of m. When p' divides the element count that is
  // 2(p'-1)/p' S (Thakur et al. 2005, section 4.5). The fold (reducers/fold.hpp) adds S each way to an
  // odd rank below 2r (r = p - p') and leaves its even partner S each way and nothing else.
  std::vector<RankBytes> out(static_cast<size_t>(p));
  const size_t n = bytes / sizeof(float);
  if (p == 1 || n == 0) return out;
  const int pof2 = largest_pof2(p), rem = p - pof2;
  const size_t q = static_cast<size_t>(pof2);
  auto range_bytes = [&](size_t lo, size_t hi) {
    return (block_begin(n, q, hi) - block_begin(n, q, lo)) * sizeof(float);
  };
  for (int i = 0; i < p; ++i) {
    uint64_t b = 0;
    if (i < 2 * rem && i % 2 == 0) {
      b = bytes;
    } else {
      const size_t v = static_cast<size_t>(i < 2 * rem ? i / 2 : i - rem);
      b = bytes - range_bytes(v, v + 1);
      for (size_t m = 1; m < q; m *= 2) b += range_bytes(v & ~(m - 1), (v & ~(m - 1)) + m);
      if (i < 2 * rem) b += bytes;
    }
    out[static_cast<size_t>(i)] = {b, b};
  }
  return out;
}

}  // namespace dtbench
