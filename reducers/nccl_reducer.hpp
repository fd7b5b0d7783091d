// The NCCL reducer, for gradient buffers that live on a GPU (built only with CUDA).
//
// NcclReducer: ncclAllReduce (sum, float32, in place) on its own CUDA stream. The communicator is
// bootstrapped over the Comm itself: rank 0 creates the NCCL unique id (ncclGetUniqueId) and sends it to
// every other rank, then all call ncclCommInitRank; so it runs under MPI and on the in-process thread
// transport alike. Each rank uses device (local rank mod device count): the local rank from the launcher's
// environment (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID) under MPI, the rank itself on
// the thread transport; NCCL refuses two ranks of one communicator on one device. Without a usable device
// the constructor throws BadInput "reducer nccl: no CUDA device: ..." (exit 2).
//
// run() orders the allreduce after the producer stream (set_producer_stream): when a request is issued
// (Reducer::start, on the caller's thread) an event is recorded on the producer stream, and the NCCL stream
// waits for that event (device_stream.hpp, IssueFences). So a bucket announced during backward goes on the
// wire as soon as its own gradients are computed, while backward continues on the model's stream; without a
// producer it waits for the whole device first. It returns when the allreduce has finished (the Reducer contract: the buffer is
// final when run returns); on the Reducer wrapper's communication thread that wait overlaps backward. A buffer in
// host memory is copied to a device buffer of the reducer's and back, so `dtbench allreduce --reducer
// nccl` also runs on host buffers (its time then includes the two copies).
//
// NCCL's ring and tree allreduces add in an order fixed by the topology, rank count and size, so a run
// repeats bit for bit on the same machine and rank count.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <string>

#include "core/cuda/device.hpp"
#include "core/cuda/owned.hpp"
#include "reducers/allreduce.hpp"
#include "reducers/device_stream.hpp"

namespace dtbench {

class NcclReducer : public Allreduce {
 public:
  explicit NcclReducer(Comm& comm);
  ~NcclReducer() override;
  std::string name() const override { return "nccl"; }

  // The stream the gradients are produced on (nullptr: wait for the whole device before each allreduce).
  // Set it before issuing requests.
  void set_producer_stream(cudaStream_t producer) { fences_.set_producer(producer); }
  int device() const { return device_; }

  void issued() override { fences_.record(); }
  void dropped() override { fences_.drop_next(); }

 protected:
  void run(float* data, size_t count) override;

 private:
  static void destroy_comm(ncclComm_t c) noexcept { ncclCommDestroy(c); }
  void check(ncclResult_t r, const char* call) const;
  int device_ = 0;
  // Destroyed in reverse order: the communicator and the staging buffer before the stream they use.
  gpu::Stream stream_;
  IssueFences fences_;
  gpu::Owned<ncclComm_t, destroy_comm> nccl_;
  gpu::DeviceBuffer staging_;  // for host buffers
};

}  // namespace dtbench
