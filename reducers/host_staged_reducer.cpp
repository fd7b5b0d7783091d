#include "reducers/host_staged_reducer.hpp"

#include <stdexcept>

#include "core/cuda/cuda_check.hpp"
#include "reducers/device_stream.hpp"

namespace dtbench {

namespace {
// The calling thread's device, once a device is known to be usable.
int current_device(const std::string& who) {
  gpu::require_device(who);
  int device = 0;
  DTB_CUDA(cudaGetDevice(&device));
  return device;
}
}  // namespace

HostStagedReducer::HostStagedReducer(Comm& comm, std::unique_ptr<Allreduce> inner, cudaStream_t producer)
    : Allreduce(comm),
      inner_(std::move(inner)),
      device_(current_device("reducer " + (inner_ ? inner_->name() : std::string("?")) + " on device buffers")),
      fences_(device_) {
  if (!inner_ || &inner_->comm() != &comm) {
    throw std::invalid_argument("HostStagedReducer: the inner reducer must run on the same comm");
  }
  fences_.set_producer(producer);
  DTB_CUDA(cudaStreamCreateWithFlags(stream_.out(), cudaStreamNonBlocking));
}

HostStagedReducer::~HostStagedReducer() {
  // The members go after this body; the copies that use the staging buffer must have finished first.
  gpu::DeviceGuard on(device_);
  if (stream_) cudaStreamSynchronize(stream_.get());
}

void HostStagedReducer::run(float* data, size_t count) {
  // The device first: the pointer query and everything after it must not open a context on device 0 of a
  // communication thread that has not selected one.
  DTB_CUDA(cudaSetDevice(device_));
  fences_.wait_next(stream_.get());  // also for host buffers and count 0: each issued request takes its point
  if (count == 0 || !is_device_pointer(data)) {
    inner_->run(data, count);
    return;
  }
  if (staging_.bytes() < count * sizeof(float)) staging_ = gpu::PinnedBuffer(count * sizeof(float));
  float* host = staging_.as<float>();
  DTB_CUDA(cudaMemcpyAsync(host, data, count * sizeof(float), cudaMemcpyDeviceToHost, stream_.get()));
  DTB_CUDA(cudaStreamSynchronize(stream_.get()));
  inner_->run(host, count);
  DTB_CUDA(cudaMemcpyAsync(data, host, count * sizeof(float), cudaMemcpyHostToDevice, stream_.get()));
  DTB_CUDA(cudaStreamSynchronize(stream_.get()));
}

}  // namespace dtbench
