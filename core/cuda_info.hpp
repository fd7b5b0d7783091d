// CUDA, cuDNN and NCCL versions and the visible GPUs, for provenance. Built from cuda_info_gpu.cpp when
// a CUDA toolkit was found, else from cuda_info_none.cpp. Never fails: a machine without a driver or
// GPU reports device_count 0 and a status line saying why.
#pragma once

#include <string>

#include "core/json.hpp"

namespace dtbench {

Json cuda_info();

// Whether this machine can run CUDA work, and if not, why.
//   usable  at least one device.
//   absent  nothing to run on: no GPU (cudaErrorNoDevice, or a count of 0), no driver installed
//           (cudaErrorInsufficientDriver while cudaDriverGetVersion reports 0), or a build without CUDA.
//   broken  a driver is installed but the runtime cannot use it: a driver older than the runtime this was
//           built with (cudaErrorInsufficientDriver with a driver version above 0), or any other error. A GPU
//           node in this state is misconfigured; its GPU tests fail instead of skipping (tests/gpu).
struct CudaDevices {
  enum class State { usable, absent, broken };
  State state = State::absent;
  int count = 0;       // usable devices (0 unless usable)
  std::string reason;  // why not usable ("" when usable)
};
CudaDevices cuda_devices();

// The classification alone, from cudaGetDeviceCount's status (as an int: cudaSuccess 0,
// cudaErrorInsufficientDriver 35, cudaErrorNoDevice 100), its name and text, the count it gave, and
// cudaDriverGetVersion / CUDART_VERSION (1000 x major + 10 x minor), so it is tested without a GPU.
CudaDevices classify_cuda_devices(int status, const std::string& status_name, const std::string& status_text,
                                  int count, int driver_version, int runtime_version);

// Number of usable CUDA devices (0 unless cuda_devices() is usable).
inline int cuda_device_count() { return cuda_devices().count; }

}  // namespace dtbench
