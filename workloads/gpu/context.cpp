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
  DTB_CUDA(cudaStreamCreateWithFlags(stream_.out(), cudaStreamNonBlocking));
  DTB_CUDNN(cudnnCreate(cudnn_.out()));
  DTB_CUDNN(cudnnSetStream(cudnn_.get(), stream_.get()));
  DTB_CUBLAS(cublas_api().create(cublas_.out()));
  DTB_CUBLAS(cublas_api().set_stream(cublas_.get(), stream_.get()));
  // No TF32 for fp32 data: fp32 results must match the CPU backend to fp32 rounding (the gemms also pass
  // CUBLAS_COMPUTE_32F, which never down-converts).
  DTB_CUBLAS(cublas_api().set_math_mode(cublas_.get(), CUBLAS_DEFAULT_MATH));
}

GpuContext::~GpuContext() {
  // The members go after this body, in reverse order; the work queued on the stream must be done first.
  if (stream_) cudaStreamSynchronize(stream_.get());
}

void GpuContext::reserve_workspace(size_t bytes) {
  if (bytes <= workspace_.bytes()) return;
  DTB_CUDA(cudaStreamSynchronize(stream_.get()));
  workspace_ = DeviceBuffer();
  workspace_ = DeviceBuffer(bytes);
}

TensorDesc::TensorDesc(int n, int c, int h, int w, cudnnDataType_t type) {
  DTB_CUDNN(cudnnCreateTensorDescriptor(d_.out()));
  DTB_CUDNN(cudnnSetTensor4dDescriptor(d_.get(), CUDNN_TENSOR_NCHW, type, n, c, h, w));
}

}  // namespace dtbench::gpu
