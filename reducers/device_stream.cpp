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

void order_after(cudaStream_t producer, cudaEvent_t ready, cudaStream_t consumer) {
  if (producer == nullptr) {
    DTB_CUDA(cudaDeviceSynchronize());
    return;
  }
  DTB_CUDA(cudaEventRecord(ready, producer));
  DTB_CUDA(cudaStreamWaitEvent(consumer, ready, 0));
}

}  // namespace dtbench
