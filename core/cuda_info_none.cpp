#include "core/cuda_info.hpp"

namespace dtbench {
Json cuda_info() { return {{"built", false}, {"device_count", 0}, {"status", "built without CUDA"}}; }
int cuda_device_count() { return 0; }
}  // namespace dtbench
