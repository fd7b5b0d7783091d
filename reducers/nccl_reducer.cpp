#include "reducers/nccl_reducer.hpp"

#include <stdexcept>

#include "core/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "reducers/device_stream.hpp"

namespace dtbench {

namespace {

// Selects the rank's device: its local rank's (the rank itself on the thread transport), as device.hpp says.
int select_nccl_device(const Comm& comm) {
  const int local = comm.transport() == "thread" ? comm.rank() : gpu::local_rank_from_env(comm.rank());
  return gpu::select_device(local, "reducer nccl");
}

}  // namespace

// ---- NcclReducer -------------------------------------------------------------------------------------

NcclReducer::NcclReducer(Comm& comm) : Allreduce(comm), device_(select_nccl_device(comm)), fences_(device_) {
  DTB_CUDA(cudaStreamCreateWithFlags(stream_.out(), cudaStreamNonBlocking));
  ncclUniqueId id{};
  if (comm.rank() == 0) {
    check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    for (int r = 1; r < comm.size(); ++r) comm.send(r, &id, sizeof id, kTagNcclBootstrap);
  } else {
    comm.recv(0, &id, sizeof id, kTagNcclBootstrap);
  }
  check(ncclCommInitRank(nccl_.out(), comm.size(), id, comm.rank()), "ncclCommInitRank");
}

NcclReducer::~NcclReducer() {
  // The members go after this body; the work that uses them must have finished first.
  gpu::DeviceGuard on(device_);
  if (stream_) cudaStreamSynchronize(stream_.get());
}

void NcclReducer::check(ncclResult_t r, const char* call) const {
  if (r == ncclSuccess) return;
  std::string detail = ncclGetErrorString(r);
  if (nccl_) {
    const char* last = ncclGetLastError(nccl_.get());
    if (last != nullptr && *last != '\0') detail += " (" + std::string(last) + ")";
  }
  throw RunFailed(std::string(call) + " failed on rank " + std::to_string(comm().rank()) + ", device " +
                  std::to_string(device_) + ": " + detail);
}

void NcclReducer::run(float* data, size_t count) {
  DTB_CUDA(cudaSetDevice(device_));  // the communication thread starts on device 0
  fences_.wait_next(stream_.get());  // also for count 0: each issued request takes its own point
  if (count == 0) return;
  float* buf = data;
  const bool staged = !is_device_pointer(data);
  if (staged) {
    if (staging_.bytes() < count * sizeof(float)) staging_ = gpu::DeviceBuffer(count * sizeof(float));
    buf = staging_.as<float>();
    DTB_CUDA(cudaMemcpyAsync(buf, data, count * sizeof(float), cudaMemcpyHostToDevice, stream_.get()));
  }
  check(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, nccl_.get(), stream_.get()), "ncclAllReduce");
  if (staged) DTB_CUDA(cudaMemcpyAsync(data, buf, count * sizeof(float), cudaMemcpyDeviceToHost, stream_.get()));
  DTB_CUDA(cudaStreamSynchronize(stream_.get()));
}

}  // namespace dtbench
