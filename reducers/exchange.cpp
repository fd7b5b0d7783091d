#include "reducers/exchange.hpp"

#include <algorithm>

namespace dtbench {

void sum_into(float* __restrict dst, const float* __restrict src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] += src[i];
}

size_t segment_count(size_t max_elems, const ReducerOptions& o) {
  const size_t bytes = max_elems * sizeof(float);
  const size_t seg = bytes <= o.small_transfer_bytes ? o.small_segment_bytes : o.segment_bytes;
  const size_t seg_elems = std::max<size_t>(1, seg / sizeof(float));
  return std::max<size_t>(1, (max_elems + seg_elems - 1) / seg_elems);
}

size_t max_segment_elems(const ReducerOptions& o) {
  // A segment of a transfer of L floats in ceil(L/s) segments has at most s floats.
  return std::max<size_t>(1, std::max(o.segment_bytes, o.small_segment_bytes) / sizeof(float));
}

namespace {
struct Seg {
  size_t begin, len;
};
Seg segment(size_t n, size_t nseg, size_t k) {
  size_t b = block_begin(n, nseg, k), e = block_begin(n, nseg, k + 1);
  return {b, e - b};
}
}  // namespace

void sendrecv_sum(Comm& comm, int dst, const float* send, size_t nsend, int src, float* accum, size_t nrecv,
                  float* scratch, size_t nseg, int tag) {
  for (size_t k = 0; k < nseg; ++k) {
    Seg s = segment(nsend, nseg, k), r = segment(nrecv, nseg, k);
    comm.sendrecv(dst, send + s.begin, s.len * sizeof(float), src, scratch, r.len * sizeof(float), tag);
    sum_into(accum + r.begin, scratch, r.len);
  }
}

void send_segments(Comm& comm, int dst, const float* send, size_t n, size_t nseg, int tag) {
  for (size_t k = 0; k < nseg; ++k) {
    Seg s = segment(n, nseg, k);
    comm.send(dst, send + s.begin, s.len * sizeof(float), tag);
  }
}

void recv_sum_segments(Comm& comm, int src, float* accum, size_t n, float* scratch, size_t nseg, int tag) {
  for (size_t k = 0; k < nseg; ++k) {
    Seg r = segment(n, nseg, k);
    comm.recv(src, scratch, r.len * sizeof(float), tag);
    sum_into(accum + r.begin, scratch, r.len);
  }
}

void sendrecv_copy(Comm& comm, int dst, const float* send, size_t nsend, int src, float* recv, size_t nrecv,
                   size_t nseg, int tag) {
  for (size_t k = 0; k < nseg; ++k) {
    Seg s = segment(nsend, nseg, k), r = segment(nrecv, nseg, k);
    comm.sendrecv(dst, send + s.begin, s.len * sizeof(float), src, recv + r.begin, r.len * sizeof(float), tag);
  }
}

}  // namespace dtbench
