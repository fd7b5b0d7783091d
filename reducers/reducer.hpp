// A gradient reducer: one allreduce algorithm (reducers/allreduce.hpp) and the communication thread that
// runs it asynchronously. The thread belongs to this wrapper alone, so no algorithm has to stop it: the
// destructor finishes the queued requests and joins the thread before the algorithm is destroyed.
//
// Contract for callers: every rank calls allreduce (or start) with the same count, in the same order.
// Any rank count >= 1 and any count, including 0 and counts below the rank count.
//
// Asynchronous use (overlap with backward): start() queues a request for the communication thread,
// which runs the requests one after another in FIFO order; wait() blocks until all queued requests are
// done (wait(ticket) until that one is) and rethrows the first failure. The buffer of a started request
// must not be touched until it is waited for. allreduce() on the calling thread first waits for
// everything queued, so the two styles never interleave on the wire.
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

#include "reducers/allreduce.hpp"
#include "reducers/comm.hpp"
#include "reducers/reducer_options.hpp"

namespace dtbench {

class Reducer {
 public:
  explicit Reducer(std::unique_ptr<Allreduce> algorithm);
  // Waits for queued requests, then ends the communication thread, before the algorithm goes.
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  std::string name() const { return algorithm_->name(); }
  // busbw = algbw x bus_factor(ranks): the registry's factor for this reducer (reducers/registry.hpp).
  double bus_factor(int nranks) const;

  // Blocking allreduce on the calling thread.
  void allreduce(float* data, size_t count);

  // Asynchronous allreduce on the communication thread; returns a ticket for wait(ticket).
  uint64_t start(float* data, size_t count);
  void wait();
  void wait(uint64_t ticket);

  Comm& comm() const { return algorithm_->comm(); }
  Allreduce& algorithm() const { return *algorithm_; }

  // Seconds spent inside the algorithm so far, on any thread: the communication time of a training
  // step, part of which may be hidden behind backward.
  double busy_seconds() const;

 private:
  struct Request {
    float* data;
    size_t count;
    uint64_t ticket;
  };
  void comm_thread_main();
  void rethrow_pending_error(std::unique_lock<std::mutex>& lock);
  void add_busy(double seconds);

  std::unique_ptr<Allreduce> algorithm_;

  mutable std::mutex busy_m_;
  double busy_ = 0;  // seconds inside the algorithm, both threads

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Request> queue_;
  uint64_t issued_ = 0;    // last ticket handed out
  uint64_t finished_ = 0;  // every ticket <= finished_ is done (or dropped after a failure)
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread thread_;  // started by the first start()
};

// Builds a reducer (the algorithm from the registry, reducers/registry.hpp, in its wrapper); BadInput
// for an unknown name (listing the valid ones), for "mpi" on a non-MPI Comm and for options out of range.
std::unique_ptr<Reducer> make_reducer(const std::string& name, Comm& comm, const ReducerOptions& options = {});

}  // namespace dtbench
