// One GPU per rank, and the memory the GPU code owns.
//
// Device selection: a rank uses device (local rank mod device count), where the local rank is the rank's
// index among the ranks on its node as the launcher reports it: OMPI_COMM_WORLD_LOCAL_RANK under Open MPI,
// MPI_LOCALRANKID under MPICH/Hydra, SLURM_LOCALID under srun (last: an mpirun inside a Slurm job passes every
// rank its batch shell's SLURM_LOCALID=0); without any of them the caller's fallback (its rank, right for one
// node). A machine without a usable device is bad input
// for anything that asks for the GPU: BadInput (exit 2) whose message says "no CUDA device" (no GPU, no
// driver) or "CUDA device unusable" (a driver the runtime cannot use, e.g. one older than the toolkit), and
// gives the reason (core/cuda_info.hpp, cuda_devices(), tells the two apart).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace dtbench::gpu {

// Usable CUDA devices; 0 when the runtime reports an error (and the error is cleared).
int device_count();

// Why there is no usable device ("" when there is one), e.g. "no CUDA driver is installed (...)".
std::string no_device_reason();

// Throws BadInput("<who>: no CUDA device: <reason>"), or "<who>: CUDA device unusable: <reason>" for a
// broken driver, unless a device is usable; returns the device count.
int require_device(const std::string& who);

// The node-local rank from the launcher's environment (see above), else `fallback`. A variable that is
// set but not a non-negative integer is BadInput naming it.
int local_rank_from_env(int fallback);

// Selects device local_rank % device_count() for the calling thread and returns its index. require_device
// first (BadInput naming `who`).
int select_device(int local_rank, const std::string& who);

// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)" for provenance lines and messages.
std::string device_description(int device);

// Where a Buffer lives: device memory (cudaMalloc, zero-filled on allocation), or page-locked host memory
// (cudaMallocHost), the source and target of asynchronous copies. The zero fill is finished when allocate
// returns: it runs on the legacy default stream, which the non-blocking work streams do not wait for, so
// allocate synchronises the device after it (allocation happens while plans are built, never per step).
enum class Memory { device, pinned };
void* allocate(Memory where, size_t bytes);  // nullptr for 0 bytes
void release(Memory where, void* p) noexcept;

// Host <-> device copies in order with the work on `stream` (cudaMemcpyAsync there), returning when the copy
// is complete, so the host side may be reused or read at once. Not cudaMemcpy: it runs on the legacy
// default stream, which the non-blocking work streams neither wait for nor are waited for by, and from
// pageable memory it may return before the data has reached the device; a kernel on a work stream could
// then read stale weights or optimizer state. 0 bytes copy nothing.
void copy_to_device(void* device, const void* host, size_t bytes, cudaStream_t stream);
void copy_to_host(void* host, const void* device, size_t bytes, cudaStream_t stream);

// An owned allocation of `Memory`, freed on destruction. Movable, not copyable.
template <Memory Where>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes) : p_(allocate(Where, bytes)), bytes_(bytes) {}
  ~Buffer() { release(Where, p_); }
  Buffer(Buffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      release(Where, p_);
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* get() const { return p_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

using DeviceBuffer = Buffer<Memory::device>;
using PinnedBuffer = Buffer<Memory::pinned>;

}  // namespace dtbench::gpu
