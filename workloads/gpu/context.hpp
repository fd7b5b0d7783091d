// What every GPU layer of a model shares: the device, the compute stream, one cuDNN and one cuBLAS
// handle bound to that stream, and one cuDNN workspace. All work of a model runs in order on its stream,
// so one workspace serves every layer.
//
// Also the small RAII wrappers for cuDNN descriptors and the data-type mappings.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <library_types.h>

#include <cstddef>

#include "core/cuda/device.hpp"
#include "workloads/gpu/precision.hpp"

namespace dtbench::gpu {

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
  cudaStream_t stream() const { return stream_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  cublasHandle_t cublas() const { return cublas_; }

  // Grows the shared workspace to at least `bytes` (while building plans: it synchronises the stream
  // before freeing the old one). Operations read workspace() when they run, never earlier.
  void reserve_workspace(size_t bytes);
  void* workspace() const { return workspace_.get(); }
  size_t workspace_bytes() const { return workspace_.bytes(); }

 private:
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  DeviceBuffer workspace_;
};

// A 4-d NCHW tensor descriptor (fully packed) of one data type.
class TensorDesc {
 public:
  TensorDesc(int n, int c, int h, int w, cudnnDataType_t type);
  ~TensorDesc();
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

}  // namespace dtbench::gpu
