// CUDA, cuDNN and NCCL versions and the visible GPUs, for provenance. Built from cuda_info_gpu.cpp when
// a CUDA toolkit was found, else from cuda_info_none.cpp. Never fails: a machine without a driver or
// GPU reports device_count 0 and a status line saying why.
#pragma once

#include "core/json.hpp"

namespace dtbench {
Json cuda_info();
// Number of usable CUDA devices (0 without a driver or GPU, or in a build without CUDA).
int cuda_device_count();
}  // namespace dtbench
