#include "workloads/gpu/context.hpp"

#include <stdexcept>

#include "workloads/gpu/lib_check.hpp"

namespace dtbench::gpu {

cudnnDataType_t cudnn_type(Precision p) {
  switch (p) {
    case Precision::fp32: return CUDNN_DATA_FLOAT;
    case Precision::bf16: return CUDNN_DATA_BFLOAT16;
    case Precision::fp16: return CUDNN_DATA_HALF;
  }
  throw std::logic_error("cudnn_type: unknown precision");
}

cudaDataType_t cuda_type(Precision p) {
  switch (p) {
    case Precision::fp32: return CUDA_R_32F;
    case Precision::bf16: return CUDA_R_16BF;
    case Precision::fp16: return CUDA_R_16F;
  }
  throw std::logic_error("cuda_type: unknown precision");
}

GpuContext::GpuContext() {
  DTB_CUDA(cudaGetDevice(&device_));
  DTB_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  DTB_CUDNN(cudnnCreate(&cudnn_));
  DTB_CUDNN(cudnnSetStream(cudnn_, stream_));
  DTB_CUBLAS(cublasCreate(&cublas_));
  DTB_CUBLAS(cublasSetStream(cublas_, stream_));
  // No TF32 for fp32 data: fp32 results must match the CPU backend to fp32 rounding (the gemms also pass
  // CUBLAS_COMPUTE_32F, which never down-converts).
  DTB_CUBLAS(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
}

GpuContext::~GpuContext() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
  workspace_ = DeviceBuffer();
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void GpuContext::reserve_workspace(size_t bytes) {
  if (bytes <= workspace_.bytes()) return;
  DTB_CUDA(cudaStreamSynchronize(stream_));
  workspace_ = DeviceBuffer();
  workspace_ = DeviceBuffer(bytes);
}

TensorDesc::TensorDesc(int n, int c, int h, int w, cudnnDataType_t type) {
  DTB_CUDNN(cudnnCreateTensorDescriptor(&d_));
  DTB_CUDNN(cudnnSetTensor4dDescriptor(d_, CUDNN_TENSOR_NCHW, type, n, c, h, w));
}

TensorDesc::~TensorDesc() {
  if (d_ != nullptr) cudnnDestroyTensorDescriptor(d_);
}

}  // namespace dtbench::gpu
