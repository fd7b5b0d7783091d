#include "reducers/host_staged_reducer.hpp"

#include <stdexcept>

#include "core/cuda/cuda_check.hpp"
#include "reducers/device_stream.hpp"

namespace dtbench {

HostStagedReducer::HostStagedReducer(Comm& comm, std::unique_ptr<Allreduce> inner, cudaStream_t producer)
    : Allreduce(comm), inner_(std::move(inner)), producer_(producer) {
  if (!inner_ || &inner_->comm() != &comm) {
    throw std::invalid_argument("HostStagedReducer: the inner reducer must run on the same comm");
  }
  gpu::require_device("reducer " + inner_->name() + " on device buffers");
  DTB_CUDA(cudaGetDevice(&device_));
  DTB_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  DTB_CUDA(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
}

HostStagedReducer::~HostStagedReducer() {
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (ready_ != nullptr) cudaEventDestroy(ready_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void HostStagedReducer::run(float* data, size_t count) {
  if (count == 0 || !is_device_pointer(data)) {
    inner_->run(data, count);
    return;
  }
  DTB_CUDA(cudaSetDevice(device_));
  order_after(producer_, ready_, stream_);
  if (staging_.bytes() < count * sizeof(float)) staging_ = gpu::PinnedBuffer(count * sizeof(float));
  float* host = staging_.as<float>();
  DTB_CUDA(cudaMemcpyAsync(host, data, count * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  DTB_CUDA(cudaStreamSynchronize(stream_));
  inner_->run(host, count);
  DTB_CUDA(cudaMemcpyAsync(data, host, count * sizeof(float), cudaMemcpyHostToDevice, stream_));
  DTB_CUDA(cudaStreamSynchronize(stream_));
}

}  // namespace dtbench
