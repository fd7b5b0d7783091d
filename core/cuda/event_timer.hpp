// GPU phase timing with CUDA events (the GPU twin of core/timer.hpp's Stopwatch).
//
// start(stream) and stop(stream) record events on the stream; seconds() waits for the stop event and
// returns the device time between the two (cudaEventElapsedTime: about half a microsecond of resolution).
// Host clocks would measure when work was enqueued, not when it ran; events measure the stream itself.
#pragma once

#include <cuda_runtime_api.h>

#include "core/cuda/owned.hpp"

namespace dtbench::gpu {

class EventTimer {
 public:
  EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void start(cudaStream_t stream);
  void stop(cudaStream_t stream);
  // Blocks until the stop event has completed. 0 if start or stop was never recorded.
  double seconds() const;

 private:
  Event start_, stop_;
  bool started_ = false, stopped_ = false;
};

}  // namespace dtbench::gpu
