// cuDNN and cuBLAS status checks (see cuda_check.hpp): kept apart so that kernels and the runtime helpers
// need not include the libraries' headers.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include "core/cuda/cuda_check.hpp"
#include "workloads/gpu/cublas_api.hpp"

namespace dtbench::gpu {

inline void check_cudnn(cudnnStatus_t s, const char* call, const char* file, int line) {
  if (s != CUDNN_STATUS_SUCCESS) throw_failed_call("cuDNN", call, file, line, cudnnGetErrorString(s));
}

inline void check_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    const CublasApi& api = cublas_api();
    throw_failed_call("cuBLAS", call, file, line, std::string(api.status_name(s)) + ": " + api.status_string(s));
  }
}

}  // namespace dtbench::gpu

#define DTB_CUDNN(call) ::dtbench::gpu::check_cudnn((call), #call, __FILE__, __LINE__)
#define DTB_CUBLAS(call) ::dtbench::gpu::check_cublas((call), #call, __FILE__, __LINE__)
