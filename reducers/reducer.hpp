// A gradient reducer: sums a float32 buffer in place across the ranks of a Comm (allreduce).
//
// All setup (scratch buffers, peers) happens in the constructor or on the first call for a size; the
// hot path is run() only. Every algorithm sums in a fixed order, so all ranks end with bitwise
// identical results and the same inputs give the same bits on every run (orders differ between
// algorithms, so two algorithms may differ in the last bits on inputs that are not exact).
//
// Contract for callers: every rank calls allreduce (or start) with the same count, in the same order.
// Any rank count >= 1 and any count, including 0 and counts below the rank count.
//
// Asynchronous use (overlap with backward): start() queues a request for the reducer's communication
// thread, which runs the requests one after another in FIFO order; wait() blocks until all queued
// requests are done (wait(ticket) until that one is) and rethrows the first failure. The buffer of a
// started request must not be touched until it is waited for. allreduce() on the calling thread first
// waits for everything queued, so the two styles never interleave on the wire.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "reducers/comm.hpp"

namespace dtbench {

// Bus-bandwidth factor of an allreduce over n ranks, as nccl-tests defines it (doc/PERFORMANCE.md):
// busbw = algbw x 2(n-1)/n, the bytes each rank must send (and receive) per byte of buffer in a
// bandwidth-optimal allreduce. It depends on the operation, not the algorithm, so busbw ranks the
// algorithms by time and compares with the link's peak bandwidth. 0 for one rank (nothing moves).
double allreduce_bus_factor(int nranks);

// Segmenting of the ring, butterfly and halving_doubling transfers (reducers/exchange.hpp): a transfer
// of more than small_transfer_bytes goes as segments of segment_bytes; a smaller one as segments of
// small_segment_bytes. The small rule keeps small messages under MPI's eager limit: Open MPI's
// shared-memory transport sends up to 4 KiB including its header eagerly and anything larger by a
// rendezvous handshake; on the 2-core test machine one 4096-byte message took 3.1-3.6 us against
// 1.3-1.4 us for two 2 KiB ones, and eager segments win for transfers up to about 16 KiB
// (BENCHMARKS.md, "Reducers"). small_transfer_bytes = 0 turns the rule off.
struct ReducerOptions {
  int servers = 1;                         // parameter_server: shard count S, 1 <= S <= ranks
  size_t segment_bytes = size_t{1} << 20;  // segment size of large transfers
  size_t small_segment_bytes = 4032;       // segment size of small transfers (under the eager limit)
  size_t small_transfer_bytes = 16384;     // transfers up to this size count as small
};

class Reducer {
 public:
  explicit Reducer(Comm& comm);
  virtual ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  virtual std::string name() const = 0;
  // busbw = algbw x bus_factor(ranks); see allreduce_bus_factor.
  virtual double bus_factor(int nranks) const = 0;

  // Blocking allreduce on the calling thread.
  void allreduce(float* data, size_t count);

  // Asynchronous allreduce on the communication thread; returns a ticket for wait(ticket).
  uint64_t start(float* data, size_t count);
  void wait();
  void wait(uint64_t ticket);

  Comm& comm() const { return comm_; }

  // Seconds spent inside run() so far, on any thread: the communication time of a training step,
  // part of which may be hidden behind backward.
  double busy_seconds() const;

 protected:
  // The algorithm: sums data[0, count) across ranks in place.
  virtual void run(float* data, size_t count) = 0;

  // Waits for queued requests, then ends the communication thread. Every concrete reducer calls it
  // first thing in its destructor: the thread runs the derived run(), which must not outlive the
  // derived members (by the time ~Reducer runs they are gone).
  void stop_comm_thread();

 private:
  struct Request {
    float* data;
    size_t count;
    uint64_t ticket;
  };
  void comm_thread_main();
  void rethrow_pending_error(std::unique_lock<std::mutex>& lock);
  void add_busy(double seconds);

  mutable std::mutex busy_m_;
  double busy_ = 0;  // seconds inside run(), both threads

  Comm& comm_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Request> queue_;
  uint64_t issued_ = 0;    // last ticket handed out
  uint64_t finished_ = 0;  // every ticket <= finished_ is done (or dropped after a failure)
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread thread_;  // started by the first start()
};

// The reducer names, in a fixed order: parameter_server, tree, butterfly, ring, halving_doubling, mpi.
const std::vector<std::string>& reducer_names();

// Builds a reducer; BadInput for an unknown name (listing the valid ones), for "mpi" on a non-MPI Comm
// and for options out of range.
std::unique_ptr<Reducer> make_reducer(const std::string& name, Comm& comm, const ReducerOptions& options = {});

// Fixed tags, one per algorithm, so two reducers sharing a Comm never match each other's messages.
enum ReducerTag : int {
  kTagParameterServer = 101,
  kTagTree = 102,
  kTagButterfly = 103,
  kTagRing = 104,
  kTagHalvingDoubling = 105,
  kTagDriver = 199,  // the allreduce benchmark driver's own small messages
};

}  // namespace dtbench
