// An allreduce algorithm: sums a float32 buffer in place across the ranks of a Comm, on the calling
// thread. One subclass per algorithm (ring.hpp, tree.hpp, ...); the Reducer wrapper (reducer.hpp) runs
// it blocking or on its communication thread, so an algorithm is a plain synchronous object.
//
// All setup (scratch buffers, peers) happens in the constructor or on the first call for a size; the
// hot path is run() only. Every algorithm sums in a fixed order, so all ranks end with bitwise
// identical results and the same inputs give the same bits on every run (orders differ between
// algorithms, so two algorithms may differ in the last bits on inputs that are not exact).
//
// Contract for callers: every rank calls run with the same count, in the same order. Any rank count
// >= 1 and any count, including 0 and counts below the rank count.
#pragma once

#include <cstddef>
#include <string>

#include "reducers/comm.hpp"

namespace dtbench {

class Allreduce {
 public:
  explicit Allreduce(Comm& comm) : comm_(comm) {}
  virtual ~Allreduce() = default;
  Allreduce(const Allreduce&) = delete;
  Allreduce& operator=(const Allreduce&) = delete;

  // The registry name (reducers/registry.hpp).
  virtual std::string name() const = 0;
  // Sums data[0, count) across ranks in place; the buffer is final when it returns.
  virtual void run(float* data, size_t count) = 0;

  // Called by the Reducer on the caller's thread each time a request is issued (allreduce or start), in
  // issue order, before run() gets that request; and dropped() for each issued request that run() will
  // never get (those queued behind a failure). The GPU reducers record there the point of the producer
  // stream that the request's gradients end at, so an allreduce started during backward waits for its own
  // bucket only, not for the backward enqueued after it. Host algorithms need neither.
  virtual void issued() {}
  virtual void dropped() {}

  Comm& comm() const { return comm_; }

 private:
  Comm& comm_;
};

// Bus-bandwidth factor of an allreduce over n ranks, as nccl-tests defines it (doc/PERFORMANCE.md):
// busbw = algbw x 2(n-1)/n, the bytes each rank must send (and receive) per byte of buffer in a
// bandwidth-optimal allreduce. It depends on the operation, not the algorithm, so busbw ranks the
// algorithms by time and compares with the link's peak bandwidth. 0 for one rank (nothing moves).
inline double allreduce_bus_factor(int nranks) { return nranks <= 1 ? 0.0 : 2.0 * (nranks - 1) / nranks; }

// Fixed tags, one per algorithm, so two reducers sharing a Comm never match each other's messages.
enum ReducerTag : int {
  kTagParameterServer = 101,
  kTagTree = 102,
  kTagButterfly = 103,
  kTagRing = 104,
  kTagHalvingDoubling = 105,
  kTagNcclBootstrap = 106,  // the NCCL unique id, sent from rank 0 (nccl_reducer.cpp)
  kTagHierarchical = 107,   // within a node (the leaders' algorithm uses its own tag)
  kTagSubBarrier = 108,     // SubComm::barrier
  kTagSharedMemory = 109,   // the shared_memory reducer's setup (its allreduces send nothing)
  kTagDriver = 199,  // the allreduce benchmark driver's own small messages
};

}  // namespace dtbench
