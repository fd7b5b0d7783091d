// A host reducer on gradient buffers that live on a GPU (built only with CUDA).
//
// HostStagedReducer: any host reducer (ring, tree, mpi, ...) on device buffers, through pinned host copies:
// device -> host on its own stream (after the producer stream), the inner reducer's allreduce on the host
// copy, host -> device. It keeps the inner reducer's name (and so its bus factor), so records stay comparable with
// the CPU runs and with NCCL. Host buffers pass straight through.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "core/cuda/device.hpp"
#include "reducers/allreduce.hpp"

namespace dtbench {

class HostStagedReducer : public Allreduce {
 public:
  // Uses the calling thread's current device. inner must run on the same comm.
  HostStagedReducer(Comm& comm, std::unique_ptr<Allreduce> inner, cudaStream_t producer = nullptr);
  ~HostStagedReducer() override;
  std::string name() const override { return inner_->name(); }
  const Allreduce& inner() const { return *inner_; }

 protected:
  void run(float* data, size_t count) override;

 private:
  std::unique_ptr<Allreduce> inner_;
  cudaStream_t producer_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  gpu::PinnedBuffer staging_;
};

}  // namespace dtbench
