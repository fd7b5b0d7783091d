// Folding a non-power-of-two rank count into a power of two (Thakur, Rabenseifner and Gropp 2005,
// section 4.1; used by recursive doubling and by Rabenseifner's algorithm).
//
// Let p be the rank count, p' the largest power of two <= p and r = p - p'. Before the main algorithm,
// among the first 2r ranks each even rank sends its whole buffer to the odd rank above it, which adds
// it (odd + even, a fixed order); the even ranks then sit out. The p' remaining ranks (the odd ones
// below 2r and every rank from 2r on) take "virtual" ranks 0..p'-1 in order and run the
// power-of-two algorithm. Afterwards each odd rank below 2r sends the result back to its even partner,
// which receives a copy of the same bits. Cost: one extra message of the full buffer before and after.
#pragma once

#include <cstddef>

#include "reducers/comm.hpp"

namespace dtbench {

struct Fold {
  int pof2 = 1;      // p': ranks that run the power-of-two algorithm
  int rem = 0;       // r = p - p'
  int vrank = -1;    // this rank's virtual rank, or -1 when it sits out
  // Real rank of virtual rank v.
  int real(int v) const { return v < rem ? 2 * v + 1 : v + rem; }
};

// Largest power of two <= p (p >= 1).
int largest_pof2(int p);

// The pre-step: returns this rank's place in the folded group. scratch holds one segment.
Fold fold_in(Comm& comm, float* data, size_t count, float* scratch, size_t nseg, int tag);
// The post-step: hands the result back to the ranks that sat out.
void fold_out(Comm& comm, const Fold& fold, float* data, size_t count, size_t nseg, int tag);

}  // namespace dtbench
