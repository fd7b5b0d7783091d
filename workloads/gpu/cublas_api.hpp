// cuBLAS, opened when the GPU backend first needs it (dlopen) instead of linked. A process linked with
// libcublas runs libcublasLt's static initialisers when it starts, GPU run or not: 0.42 s of CPU per process on
// the 2-core test machine (BENCHMARKS.md, "Start-up"), paid by every CPU run, every MPI rank and every test
// binary. The GPU layers are its only users and call it through this table, filled once.
#pragma once

#include <cublas_v2.h>

namespace dtbench::gpu {

struct CublasApi {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  // cublasGemmEx has a second, C++-only overload (a cudaDataType compute type): name the library's own.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k,
                            const void* alpha, const void* a, cudaDataType, int lda, const void* b, cudaDataType,
                            int ldb, const void* beta, void* c, cudaDataType, int ldc, cublasComputeType_t,
                            cublasGemmAlgo_t);
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasGetStatusString) status_string;
};

// Opens the cuBLAS of the toolkit dtbench was built with (by its soname, then by its path in the toolkit) and
// resolves the functions above, the first time; RunFailed naming the library and dlerror() when it cannot.
const CublasApi& cublas_api();
// The soname cublas_api() opens first ("libcublas.so.13" for CUDA 13).
const char* cublas_soname();

}  // namespace dtbench::gpu
