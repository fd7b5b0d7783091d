#include "reducers/nccl_reducer.hpp"

#include <stdexcept>

#include "core/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "reducers/device_stream.hpp"

namespace dtbench {

namespace {
// The bootstrap message's tag, beside the algorithms' tags in allreduce.hpp (101..105, 199).
constexpr int kTagNcclBootstrap = 106;

}  // namespace

// ---- NcclReducer -------------------------------------------------------------------------------------

NcclReducer::NcclReducer(Comm& comm) : Allreduce(comm) {
  gpu::require_device("reducer nccl");
  const int local = comm.transport() == "thread" ? comm.rank() : gpu::local_rank_from_env(comm.rank());
  device_ = local % gpu::device_count();
  DTB_CUDA(cudaSetDevice(device_));
  DTB_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  DTB_CUDA(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
  ncclUniqueId id{};
  if (comm.rank() == 0) {
    check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    for (int r = 1; r < comm.size(); ++r) comm.send(r, &id, sizeof id, kTagNcclBootstrap);
  } else {
    comm.recv(0, &id, sizeof id, kTagNcclBootstrap);
  }
  check(ncclCommInitRank(&nccl_, comm.size(), id, comm.rank()), "ncclCommInitRank");
}

NcclReducer::~NcclReducer() {
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (nccl_ != nullptr) ncclCommDestroy(nccl_);
  if (ready_ != nullptr) cudaEventDestroy(ready_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void NcclReducer::check(ncclResult_t r, const char* call) const {
  if (r == ncclSuccess) return;
  std::string detail = ncclGetErrorString(r);
  if (nccl_ != nullptr) {
    const char* last = ncclGetLastError(nccl_);
    if (last != nullptr && *last != '\0') detail += " (" + std::string(last) + ")";
  }
  throw RunFailed(std::string(call) + " failed on rank " + std::to_string(comm().rank()) + ", device " +
                  std::to_string(device_) + ": " + detail);
}

void NcclReducer::run(float* data, size_t count) {
  if (count == 0) return;
  DTB_CUDA(cudaSetDevice(device_));  // the communication thread starts on device 0
  order_after(producer_, ready_, stream_);
  float* buf = data;
  const bool staged = !is_device_pointer(data);
  if (staged) {
    if (staging_.bytes() < count * sizeof(float)) staging_ = gpu::DeviceBuffer(count * sizeof(float));
    buf = staging_.as<float>();
    DTB_CUDA(cudaMemcpyAsync(buf, data, count * sizeof(float), cudaMemcpyHostToDevice, stream_));
  }
  check(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, nccl_, stream_), "ncclAllReduce");
  if (staged) DTB_CUDA(cudaMemcpyAsync(data, buf, count * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  DTB_CUDA(cudaStreamSynchronize(stream_));
}

}  // namespace dtbench
