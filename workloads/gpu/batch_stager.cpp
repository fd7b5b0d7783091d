#include "workloads/gpu/batch_stager.hpp"

#include <stdexcept>
#include <string>

#include "core/cuda/cuda_check.hpp"

namespace dtbench::gpu {

BatchStager::BatchStager(size_t max_images, size_t image_floats, cudaStream_t compute)
    : max_images_(max_images), image_floats_(image_floats), compute_(compute) {
  DTB_CUDA(cudaStreamCreateWithFlags(copy_.out(), cudaStreamNonBlocking));
  for (Slot& s : slots_) {
    s.host_x = PinnedBuffer(max_images * image_floats * sizeof(float));
    s.host_y = PinnedBuffer(max_images * sizeof(int32_t));
    s.dev_x = DeviceBuffer(max_images * image_floats * sizeof(float));
    s.dev_y = DeviceBuffer(max_images * sizeof(int32_t));
    DTB_CUDA(cudaEventCreateWithFlags(s.copied.out(), cudaEventDisableTiming));
    DTB_CUDA(cudaEventCreateWithFlags(s.released.out(), cudaEventDisableTiming));
    // Both events start "complete": record them once on their streams.
    DTB_CUDA(cudaEventRecord(s.copied.get(), copy_.get()));
    DTB_CUDA(cudaEventRecord(s.released.get(), compute_));
  }
}

BatchStager::~BatchStager() {
  // The members go after this body; the copies that read the pinned buffers must be done first.
  if (copy_.get()) cudaStreamSynchronize(copy_.get());
}

float* BatchStager::host_images() {
  Slot& s = slots_[next_];
  DTB_CUDA(cudaEventSynchronize(s.copied.get()));  // the previous copy from this slot has read the buffers
  return s.host_x.as<float>();
}

int32_t* BatchStager::host_labels() {
  Slot& s = slots_[next_];
  DTB_CUDA(cudaEventSynchronize(s.copied.get()));
  return s.host_y.as<int32_t>();
}

void BatchStager::upload(int n) {
  if (n < 1 || static_cast<size_t>(n) > max_images_) {
    throw std::invalid_argument("BatchStager::upload: batch of " + std::to_string(n) + " images, capacity " +
                                std::to_string(max_images_));
  }
  Slot& s = slots_[next_];
  // The device buffers are free once the compute stream has passed the slot's last reader.
  DTB_CUDA(cudaStreamWaitEvent(copy_.get(), s.released.get(), 0));
  DTB_CUDA(cudaMemcpyAsync(s.dev_x.get(), s.host_x.get(), size_t(n) * image_floats_ * sizeof(float),
                           cudaMemcpyHostToDevice, copy_.get()));
  DTB_CUDA(cudaMemcpyAsync(s.dev_y.get(), s.host_y.get(), size_t(n) * sizeof(int32_t), cudaMemcpyHostToDevice,
                           copy_.get()));
  DTB_CUDA(cudaEventRecord(s.copied.get(), copy_.get()));
  s.n = n;
  uploaded_ = next_;
  next_ = 1 - next_;
}

DeviceBatch BatchStager::take() {
  Slot& s = slots_[uploaded_];
  if (s.n == 0) throw std::logic_error("BatchStager::take: nothing uploaded");
  taken_ = uploaded_;
  DTB_CUDA(cudaStreamWaitEvent(compute_, s.copied.get(), 0));
  return {s.dev_x.as<const float>(), s.dev_y.as<const int32_t>(), s.n};
}

void BatchStager::release() { DTB_CUDA(cudaEventRecord(slots_[taken_].released.get(), compute_)); }

}  // namespace dtbench::gpu
