// Shared-memory allreduce: the ranks of one node reduce through a segment of memory they all map,
// without messages (Graham and Shipman 2008, "MPI support for multi-core architectures: optimized
// shared memory collectives", the design of Open MPI's coll/sm; NCCL's SHM transport and MPICH's
// release-gather collectives work the same way).
//
// Terms: p ranks on one node, the buffer cut into chunks of E floats (ReducerOptions::segment_bytes),
// chunk k handled in round k. The segment holds, per slot (two, so round k+1 fills one while round k
// drains the other), an input area per rank, one output area, and per rank three counters, each on
// its own cache line and written only by its rank:
//   arrived = k once the rank has published round k's input, reduced = k once it has written its
//   block of round k's output, released = k once it has read everything of round k.
// Round k, on rank r, with its chunk cut into p nearly equal blocks (block r is r's to reduce):
//   1. wait until every rank released round k-2 (its slot is now free), copy the chunk except block r
//      into the input area, publish arrived;
//   2. wait for every rank's arrived; block r of the output = the p ranks' block r summed in rank
//      order (its own from the buffer itself), copied back into the buffer; publish reduced;
//   3. wait for every rank's reduced; copy the other p-1 blocks of the output into the buffer;
//      publish released.
// A small chunk (chunk bytes x p <= ReducerOptions::small_transfer_bytes) takes one wait instead of
// three: every rank publishes all of it and sums all of it itself, in rank order, so all get the same
// bits; at these sizes the latency of a wait, not the bytes, is the cost.
// Each rank copies (p-1)/p of the buffer in and out and reduces (p-1)/p of it, the bandwidth optimum
// of an allreduce, as halving-doubling, but with no system call and no second copy through a
// transport: a transport's single copy (CMA) pins the pages and copies into the receiver's buffer,
// which is then summed; here the sum reads the other ranks' data where they put it. Every element is
// summed once, in rank order, by one rank, and copied to the others: all ranks get the same bits.
//
// Waiting: a rank spins on the counters (with the CPU's pause hint) for up to 20 us, then yields the
// core on each poll; with more ranks than the CPUs they may run on together (the union of the ranks'
// affinity masks: the tests, oversubscribed runs) it yields from the first poll, as the peer it waits
// for may need its core. It asks the Comm whether
// the run was aborted while it waits, so a failed peer never hangs it.
//
// Only for ranks on one node (Comm::nodes()): across nodes it is BadInput (use hierarchical). The
// segment is a POSIX shared-memory object made by rank 0, opened by the others by name (sent through
// the Comm once, in the constructor) and unlinked as soon as all have mapped it, so nothing is left in
// /dev/shm after a crash; its pages are reserved up front (posix_fallocate), so a full /dev/shm is an
// error here and not a SIGBUS later. The Comm carries no bytes of an allreduce: traffic() is that of
// mpi and nccl, none (registry.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "reducers/allreduce.hpp"
#include "reducers/cost_terms.hpp"
#include "reducers/reducer_options.hpp"

namespace dtbench {

class SharedMemory : public Allreduce {
 public:
  SharedMemory(Comm& comm, const ReducerOptions& options);
  ~SharedMemory() override;
  std::string name() const override { return "shared_memory"; }
  void run(float* data, size_t count) override;
  // The alpha-beta-gamma terms of one allreduce (reducers/cost_terms.hpp): one latency per counter
  // wait on the critical path, 2 per chunk (1 for a small one).
  static CostTerms cost(int ranks, double bytes, const ReducerOptions& options, double eager_bytes);
  // Floats per chunk: segment_bytes, at most what keeps the segment within kMaxSegmentBytes.
  static size_t chunk_elems(int ranks, const ReducerOptions& options);
  // Why ranks placed on `nodes` (each rank's node) cannot share one segment: "" when all are on one node.
  static std::string layout_problem(const std::vector<int>& nodes);
  // The segment's size cap: 2 slots x (ranks + 1) areas of a chunk. 16 ranks with 1 MiB chunks need 34
  // MiB; containers often give /dev/shm 64 MiB, shared by whatever else runs.
  static constexpr size_t kMaxSegmentBytes = size_t{16} << 20;

 private:
  struct alignas(128) Counters {  // one rank's, alone on its cache lines (and the adjacent-line prefetch)
    std::atomic<uint64_t> arrived{0}, reduced{0}, released{0};
  };
  // Atomics in memory mapped by several processes (and twice by one, under the thread transport) must
  // not depend on their address: lock-free ones do not.
  static_assert(std::atomic<uint64_t>::is_always_lock_free);
  static constexpr std::chrono::microseconds kSpin{20};  // spinning before a wait yields
  float* input(int slot, int rank) const;
  float* output(int slot) const;
  void wait_all(std::atomic<uint64_t> Counters::*which, uint64_t round) const;

  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  Counters* counters_ = nullptr;  // [ranks]
  float* areas_ = nullptr;        // [2 slots][ranks + 1 areas][chunk]
  size_t chunk_ = 0;
  bool spin_ = false;        // whether waits spin before yielding: a core per rank
  size_t small_bytes_ = 0;   // chunk bytes x ranks up to which every rank sums the whole chunk
  uint64_t round_ = 0;  // rounds completed by this rank; the same on every rank between calls
};

}  // namespace dtbench
