#include "reducers/ring.hpp"

#include <cmath>

#include "reducers/exchange.hpp"

namespace dtbench {

void Ring::run(float* data, size_t count) {
  Comm& c = comm();
  const int p = c.size(), me = c.rank();
  if (p == 1 || count == 0) return;
  const int tag = kTagRing;
  const int right = (me + 1) % p, left = (me - 1 + p) % p;
  const size_t np = static_cast<size_t>(p);
  auto chunk_begin = [&](int ch) { return block_begin(count, np, static_cast<size_t>(ch)); };
  auto chunk_len = [&](int ch) { return chunk_begin(ch + 1) - chunk_begin(ch); };
  // Every rank splits every chunk into the same number of segments, so each segment message has a
  // matching receive on the neighbour.
  const size_t max_chunk = (count + np - 1) / np;
  const size_t nseg = segment_count(max_chunk, options_);
  float* scratch = scratch_.get((max_chunk + nseg - 1) / nseg);

  for (int s = 0; s < p - 1; ++s) {
    const int send_c = (me - s + 2 * p) % p, recv_c = (me - s - 1 + 2 * p) % p;
    sendrecv_sum(c, right, data + chunk_begin(send_c), chunk_len(send_c), left, data + chunk_begin(recv_c),
                 chunk_len(recv_c), scratch, nseg, tag);
  }
  for (int s = 0; s < p - 1; ++s) {
    const int send_c = (me + 1 - s + 2 * p) % p, recv_c = (me - s + 2 * p) % p;
    sendrecv_copy(c, right, data + chunk_begin(send_c), chunk_len(send_c), left, data + chunk_begin(recv_c),
                  chunk_len(recv_c), nseg, tag);
  }
}

CostTerms Ring::cost(int p, double n, const ReducerOptions& o, double eager) {
  // Patarasuk and Yuan 2009: 2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma; each of the 2(p-1)
  // steps sends its chunk of n/p bytes as S segments, so 2(p-1) S messages of n/(pS) bytes.
  CostTerms t;
  const double P = p, elems = n / sizeof(float);
  const double S = segment_messages(std::ceil(elems / P), o);
  t.messages(2 * (P - 1) * S, n / P / S, eager);
  t.beta = 2 * (P - 1) / P * n;
  t.gamma = (P - 1) / P * n;
  t.concurrency = P;  // every rank sends and reduces in every step
  return t;
}

std::vector<RankBytes> Ring::traffic(int p, size_t bytes, const ReducerOptions&) {
  // From run(): rank i sends every chunk but i+1 in the reduce-scatter and every chunk but i+2 in the
  // allgather, and receives every chunk but i, then every chunk but i+1 (chunk indices mod p). With
  // L(c) the bytes of chunk c (block c of p, reducers/exchange.hpp) and S the buffer's bytes:
  // sent = 2S - L(i+1) - L(i+2), received = 2S - L(i) - L(i+1); when p divides the element count,
  // L = S/p and both are 2(p-1)/p S (Patarasuk and Yuan 2009). For p = 2, i+2 is i: S each way.
  std::vector<RankBytes> out(static_cast<size_t>(p));
  const size_t n = bytes / sizeof(float), np = static_cast<size_t>(p);
  if (p == 1 || n == 0) return out;
  auto L = [&](int c) { return block_len(n, np, static_cast<size_t>(c % p)) * sizeof(float); };
  for (int i = 0; i < p; ++i)
    out[static_cast<size_t>(i)] = {2 * bytes - L(i + 1) - L(i + 2), 2 * bytes - L(i) - L(i + 1)};
  return out;
}

}  // namespace dtbench
