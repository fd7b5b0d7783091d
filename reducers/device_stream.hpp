// Device-buffer helpers of the GPU reducers (CUDA builds only).
#pragma once

#include <cuda_runtime_api.h>

#include <deque>
#include <mutex>
#include <vector>

#include "core/cuda/owned.hpp"

namespace dtbench {

// Whether p points to device (or managed) memory that kernels and NCCL can use directly.
bool is_device_pointer(const void* p);

// The producer-stream point each request of a GPU reducer must wait for. record() runs when the request is
// issued, on the caller's thread (Allreduce::issued): the event then marks the end of the work that
// produced this request's buffer, and nothing enqueued later. wait_next() runs in run(), on whichever
// thread runs it, and makes the reducer's stream wait for the oldest recorded point: requests reach run()
// in issue order, so the two sides pair up. Recording at run() instead would, on the communication thread,
// take the point after the previous bucket's allreduce had finished, by when much more of backward is
// enqueued: every later bucket would wait for the whole backward and nothing would overlap.
//
// Events are reused: cudaStreamWaitEvent waits for the record that was current when it was called, so an
// event may be recorded again as soon as the wait is enqueued.
class IssueFences {
 public:
  // `device`: the device of the producer stream and of the events.
  explicit IssueFences(int device) : device_(device) {}
  IssueFences(const IssueFences&) = delete;
  IssueFences& operator=(const IssueFences&) = delete;

  void set_producer(cudaStream_t producer) { producer_ = producer; }
  // At issue: records an event on the producer stream (no producer: run() waits for the whole device).
  void record();
  // In run(): `consumer` waits for the oldest recorded point, or, for a request that was not issued through
  // a Reducer, for what is enqueued on the producer now.
  void wait_next(cudaStream_t consumer);
  // For an issued request that never reaches run().
  void drop_next();

 private:
  gpu::Event take_event();  // a free event, or a new one
  gpu::Event mark();        // an event recorded on the producer now (empty without a producer)
  int device_;
  cudaStream_t producer_ = nullptr;
  std::mutex m_;
  std::deque<gpu::Event> pending_;  // recorded, in issue order; an empty Event: wait for the whole device
  std::vector<gpu::Event> free_;
};

}  // namespace dtbench
