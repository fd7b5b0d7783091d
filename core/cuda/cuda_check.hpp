// Error checks for the CUDA runtime, cuDNN, cuBLAS and NCCL: a failed call becomes a RunFailed exception
// naming the call, the source location and the library's own message (the run started and could not go
// on: exit 1). Bad input (no device, a config the GPU backend cannot run) is reported before any of these.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "core/error.hpp"

namespace dtbench::gpu {

[[noreturn]] void throw_failed_call(const std::string& library, const char* call, const char* file, int line,
                                    const std::string& message);

inline void check_cuda(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) {
    throw_failed_call("CUDA", call, file, line, std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e));
  }
}

// After a kernel launch: reports a bad launch configuration at once (errors inside the kernel surface at
// the next synchronising call).
void check_launch(const char* kernel, const char* file, int line);

}  // namespace dtbench::gpu

#define DTB_CUDA(call) ::dtbench::gpu::check_cuda((call), #call, __FILE__, __LINE__)
#define DTB_LAUNCHED(kernel) ::dtbench::gpu::check_launch(kernel, __FILE__, __LINE__)
