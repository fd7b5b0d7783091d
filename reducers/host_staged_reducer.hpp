// A host reducer on gradient buffers that live on a GPU (built only with CUDA).
//
// HostStagedReducer: any host reducer (ring, tree, mpi, ...) on device buffers, through pinned host copies:
// device -> host on its own stream (after the producer stream's point recorded when the request was issued,
// as for NCCL: device_stream.hpp, IssueFences), the inner reducer's allreduce on the host copy, host -> device.
// Any number of ranks may share one device (the ranks exchange host memory only), so K ranks of a
// data-parallel run fit on one GPU. It keeps the inner reducer's name (and so its bus factor), so records stay comparable with
// the CPU runs and with NCCL. Host buffers pass straight through.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "core/cuda/device.hpp"
#include "core/cuda/owned.hpp"
#include "reducers/allreduce.hpp"
#include "reducers/device_stream.hpp"

namespace dtbench {

class HostStagedReducer : public Allreduce {
 public:
  // Uses the calling thread's current device. inner must run on the same comm.
  HostStagedReducer(Comm& comm, std::unique_ptr<Allreduce> inner, cudaStream_t producer = nullptr);
  ~HostStagedReducer() override;
  std::string name() const override { return inner_->name(); }
  const Allreduce& inner() const { return *inner_; }

  void issued() override { fences_.record(); }
  void dropped() override { fences_.drop_next(); }

 protected:
  void run(float* data, size_t count) override;

 private:
  std::unique_ptr<Allreduce> inner_;
  int device_ = 0;
  // Destroyed in reverse order: the staging buffer before the stream that copies it.
  gpu::Stream stream_;
  IssueFences fences_;
  gpu::PinnedBuffer staging_;
};

}  // namespace dtbench
