// Building blocks shared by the reducers: the local reduction kernel, the block partition of a buffer,
// and segmented exchanges.
//
// Segmenting: a large transfer is split into S segments that are sent and summed one after another,
// so the receive buffer (scratch) is one segment, stays in cache, and is summed while it is hot; with
// blocking point-to-point messages this is also what lets a chain of ranks stream a buffer instead of
// storing and forwarding all of it. Both ends of a transfer must split it the same way, so the
// segment count S is passed in and computed identically on both sides; segment k of a range of
// length L is [L*k/S, L*(k+1)/S), which may be empty (a zero-byte message keeps both sides in step).
#pragma once

#include <cstddef>

#include "reducers/comm.hpp"
#include "reducers/reducer_options.hpp"

namespace dtbench {

// dst[i] += src[i] for i < n: the reduction (gamma) of the cost model. A plain loop the compiler
// vectorises; elementwise, so the summation order of each element is fixed by the algorithm.
void sum_into(float* __restrict dst, const float* __restrict src, size_t n);

// First element of block b when `count` elements are split into `nblocks` nearly equal blocks
// (sizes differ by at most one; blocks may be empty when count < nblocks).
inline size_t block_begin(size_t count, size_t nblocks, size_t b) {
  // count * b fits in 64 bits for any buffer that fits in memory times any rank count we run.
  return static_cast<size_t>((static_cast<unsigned __int128>(count) * b) / nblocks);
}

// Length of block b of that partition.
inline size_t block_len(size_t count, size_t nblocks, size_t b) {
  return block_begin(count, nblocks, b + 1) - block_begin(count, nblocks, b);
}

// Number of segments for a transfer of at most `max_elems` floats under the options' segmenting rule
// (ReducerOptions). Both ends of a transfer must pass the same max_elems.
size_t segment_count(size_t max_elems, const ReducerOptions& o);
// The longest segment any transfer can have: the scratch size that always suffices.
size_t max_segment_elems(const ReducerOptions& o);

// Sends send[0, nsend) to `dst` while receiving `nrecv` floats from `src`, segment by segment, and adds
// each received segment into accum[0, nrecv) (accum[i] = accum[i] + received[i]). scratch holds at
// least one segment. send and accum may be the same buffer only when the ranges do not overlap.
void sendrecv_sum(Comm& comm, int dst, const float* send, size_t nsend, int src, float* accum, size_t nrecv,
                  float* scratch, size_t nseg, int tag);

// One direction of the above: send segments to `dst`; or receive segments from `src` and add them.
void send_segments(Comm& comm, int dst, const float* send, size_t n, size_t nseg, int tag);
void recv_sum_segments(Comm& comm, int src, float* accum, size_t n, float* scratch, size_t nseg, int tag);

// Plain exchange without reduction (allgather and broadcast steps): segment by segment into place.
void sendrecv_copy(Comm& comm, int dst, const float* send, size_t nsend, int src, float* recv, size_t nrecv,
                   size_t nseg, int tag);

}  // namespace dtbench
