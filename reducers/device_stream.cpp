#include "reducers/device_stream.hpp"

#include "core/cuda/cuda_check.hpp"

namespace dtbench {

bool is_device_pointer(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

gpu::Event IssueFences::take_event() {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (!free_.empty()) {
      gpu::Event e = std::move(free_.back());
      free_.pop_back();
      return e;
    }
  }
  gpu::Event e;
  DTB_CUDA(cudaEventCreateWithFlags(e.out(), cudaEventDisableTiming));
  return e;
}

gpu::Event IssueFences::mark() {
  gpu::Event e;
  if (producer_ == nullptr) return e;
  gpu::DeviceGuard on(device_);
  e = take_event();
  DTB_CUDA(cudaEventRecord(e.get(), producer_));
  return e;
}

void IssueFences::record() {
  gpu::Event e = mark();
  std::lock_guard<std::mutex> lock(m_);
  pending_.push_back(std::move(e));
}

void IssueFences::wait_next(cudaStream_t consumer) {
  gpu::Event e;
  bool issued = false;
  {
    std::lock_guard<std::mutex> lock(m_);
    if (!pending_.empty()) {
      e = std::move(pending_.front());
      pending_.pop_front();
      issued = true;
    }
  }
  if (!issued) e = mark();  // not issued through a Reducer: the point is now
  if (!e) {
    DTB_CUDA(cudaDeviceSynchronize());  // issued without a producer stream
    return;
  }
  const cudaError_t waited = cudaStreamWaitEvent(consumer, e.get(), 0);
  {
    std::lock_guard<std::mutex> lock(m_);
    free_.push_back(std::move(e));
  }
  DTB_CUDA(waited);
}

void IssueFences::drop_next() {
  std::lock_guard<std::mutex> lock(m_);
  if (pending_.empty()) return;
  if (pending_.front()) free_.push_back(std::move(pending_.front()));
  pending_.pop_front();
}

}  // namespace dtbench
