// What every GPU layer of a model shares: the device, the compute stream, one cuDNN and one cuBLAS
// handle bound to that stream, and one cuDNN workspace. All work of a model runs in order on its stream,
// so one workspace serves every layer.
//
// Also the owners of cuDNN and cuBLAS handles and descriptors (core/cuda/owned.hpp) and the data-type mappings.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <library_types.h>

#include <cstddef>

#include "core/cuda/device.hpp"
#include "core/cuda/owned.hpp"
#include "workloads/gpu/cublas_api.hpp"
#include "workloads/gpu/precision.hpp"

namespace dtbench::gpu {

inline void destroy_cudnn(cudnnHandle_t h) noexcept { cudnnDestroy(h); }
inline void destroy_cublas(cublasHandle_t h) noexcept { cublas_api().destroy(h); }  // loaded: h exists
inline void destroy_tensor_desc(cudnnTensorDescriptor_t d) noexcept { cudnnDestroyTensorDescriptor(d); }
inline void destroy_filter_desc(cudnnFilterDescriptor_t d) noexcept { cudnnDestroyFilterDescriptor(d); }
inline void destroy_conv_desc(cudnnConvolutionDescriptor_t d) noexcept { cudnnDestroyConvolutionDescriptor(d); }
inline void destroy_activation_desc(cudnnActivationDescriptor_t d) noexcept { cudnnDestroyActivationDescriptor(d); }
inline void destroy_pooling_desc(cudnnPoolingDescriptor_t d) noexcept { cudnnDestroyPoolingDescriptor(d); }

using CudnnHandle = Owned<cudnnHandle_t, destroy_cudnn>;
using CublasHandle = Owned<cublasHandle_t, destroy_cublas>;
using CudnnTensorDesc = Owned<cudnnTensorDescriptor_t, destroy_tensor_desc>;
using CudnnFilterDesc = Owned<cudnnFilterDescriptor_t, destroy_filter_desc>;
using CudnnConvDesc = Owned<cudnnConvolutionDescriptor_t, destroy_conv_desc>;
using CudnnActivationDesc = Owned<cudnnActivationDescriptor_t, destroy_activation_desc>;
using CudnnPoolingDesc = Owned<cudnnPoolingDescriptor_t, destroy_pooling_desc>;

cudnnDataType_t cudnn_type(Precision p);
cudaDataType_t cuda_type(Precision p);

class GpuContext {
 public:
  // Uses the calling thread's current device (select_device first).
  GpuContext();
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_.get(); }
  cudnnHandle_t cudnn() const { return cudnn_.get(); }
  cublasHandle_t cublas() const { return cublas_.get(); }

  // Grows the shared workspace to at least `bytes` (while building plans: it synchronises the stream
  // before freeing the old one). Operations read workspace() when they run, never earlier.
  void reserve_workspace(size_t bytes);
  void* workspace() const { return workspace_.get(); }
  size_t workspace_bytes() const { return workspace_.bytes(); }

 private:
  int device_ = 0;
  // Destroyed in reverse order: the workspace and the handles bound to the stream before the stream.
  Stream stream_;
  CudnnHandle cudnn_;
  CublasHandle cublas_;
  DeviceBuffer workspace_;
};

// A 4-d NCHW tensor descriptor (fully packed) of one data type.
class TensorDesc {
 public:
  TensorDesc(int n, int c, int h, int w, cudnnDataType_t type);
  cudnnTensorDescriptor_t get() const { return d_.get(); }

 private:
  CudnnTensorDesc d_;
};

}  // namespace dtbench::gpu
