// Device-buffer helpers of the GPU reducers (CUDA builds only).
#pragma once

#include <cuda_runtime_api.h>

namespace dtbench {

// Whether p points to device (or managed) memory that kernels and NCCL can use directly.
bool is_device_pointer(const void* p);

// Orders `consumer` after the work enqueued so far on `producer` (an event recorded there), or after the
// whole device when there is no producer stream.
void order_after(cudaStream_t producer, cudaEvent_t ready, cudaStream_t consumer);

}  // namespace dtbench
