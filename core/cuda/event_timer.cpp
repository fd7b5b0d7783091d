#include "core/cuda/event_timer.hpp"

#include "core/cuda/cuda_check.hpp"

namespace dtbench::gpu {

EventTimer::EventTimer() {
  DTB_CUDA(cudaEventCreate(&start_));
  DTB_CUDA(cudaEventCreate(&stop_));
}

EventTimer::~EventTimer() {
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (stop_ != nullptr) cudaEventDestroy(stop_);
}

void EventTimer::start(cudaStream_t stream) {
  DTB_CUDA(cudaEventRecord(start_, stream));
  started_ = true;
  stopped_ = false;
}

void EventTimer::stop(cudaStream_t stream) {
  DTB_CUDA(cudaEventRecord(stop_, stream));
  stopped_ = true;
}

double EventTimer::seconds() const {
  if (!started_ || !stopped_) return 0.0;
  DTB_CUDA(cudaEventSynchronize(stop_));
  float ms = 0.0f;
  DTB_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace dtbench::gpu
