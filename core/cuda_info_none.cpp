#include "core/cuda_info.hpp"

namespace dtbench {

Json cuda_info() { return {{"built", false}, {"device_count", 0}, {"status", "built without CUDA"}}; }

CudaDevices cuda_devices() { return {CudaDevices::State::absent, 0, "built without CUDA"}; }

}  // namespace dtbench
