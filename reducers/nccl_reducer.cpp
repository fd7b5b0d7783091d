#include "reducers/nccl_reducer.hpp"

#include <stdexcept>

#include "core/cuda/cuda_check.hpp"
#include "core/error.hpp"

namespace dtbench {

namespace {
// The bootstrap message's tag, beside the algorithms' tags in allreduce.hpp (101..105, 199).
constexpr int kTagNcclBootstrap = 106;

void order_after(cudaStream_t producer, cudaEvent_t ready, cudaStream_t consumer) {
  if (producer == nullptr) {
    DTB_CUDA(cudaDeviceSynchronize());
    return;
  }
  DTB_CUDA(cudaEventRecord(ready, producer));
  DTB_CUDA(cudaStreamWaitEvent(consumer, ready, 0));
}
}  // namespace

bool is_device_pointer(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

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

// ---- HostStagedReducer --------------------------------------------------------------------------------

HostStagedReducer::HostStagedReducer(Comm& comm, std::unique_ptr<Allreduce> inner, cudaStream_t producer)
    : Allreduce(comm), inner_(std::move(inner)), producer_(producer) {
  if (!inner_ || &inner_->comm() != &comm) {
    throw std::invalid_argument("HostStagedReducer: the inner reducer must run on the same comm");
  }
  gpu::require_device("reducer " + inner_->name() + " on device buffers");
  DTB_CUDA(cudaGetDevice(&device_));
  DTB_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  DTB_CUDA(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
}

HostStagedReducer::~HostStagedReducer() {
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (ready_ != nullptr) cudaEventDestroy(ready_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void HostStagedReducer::run(float* data, size_t count) {
  if (count == 0 || !is_device_pointer(data)) {
    inner_->run(data, count);
    return;
  }
  DTB_CUDA(cudaSetDevice(device_));
  order_after(producer_, ready_, stream_);
  if (staging_.bytes() < count * sizeof(float)) staging_ = gpu::PinnedBuffer(count * sizeof(float));
  float* host = staging_.as<float>();
  DTB_CUDA(cudaMemcpyAsync(host, data, count * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  DTB_CUDA(cudaStreamSynchronize(stream_));
  inner_->run(host, count);
  DTB_CUDA(cudaMemcpyAsync(data, host, count * sizeof(float), cudaMemcpyHostToDevice, stream_));
  DTB_CUDA(cudaStreamSynchronize(stream_));
}

}  // namespace dtbench
