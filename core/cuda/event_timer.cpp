#include "core/cuda/event_timer.hpp"

#include "core/cuda/cuda_check.hpp"

namespace dtbench::gpu {

EventTimer::EventTimer() {
  DTB_CUDA(cudaEventCreate(start_.out()));
  DTB_CUDA(cudaEventCreate(stop_.out()));
}

void EventTimer::start(cudaStream_t stream) {
  DTB_CUDA(cudaEventRecord(start_.get(), stream));
  started_ = true;
  stopped_ = false;
}

void EventTimer::stop(cudaStream_t stream) {
  DTB_CUDA(cudaEventRecord(stop_.get(), stream));
  stopped_ = true;
}

double EventTimer::seconds() const {
  if (!started_ || !stopped_) return 0.0;
  DTB_CUDA(cudaEventSynchronize(stop_.get()));
  float ms = 0.0f;
  DTB_CUDA(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace dtbench::gpu
