// One GPU per rank, and the memory the GPU code owns.
//
// Device selection: a rank uses device (local rank mod device count), where the local rank is the rank's
// index among the ranks on its node as the launcher reports it: SLURM_LOCALID under srun,
// OMPI_COMM_WORLD_LOCAL_RANK under Open MPI's mpirun, MPI_LOCALRANKID under MPICH/Hydra; without any of
// them the caller's fallback (its rank, right for one node). A machine without a usable device (no GPU,
// no driver) is bad input for anything that asks for the GPU: BadInput (exit 2) whose message starts
// "no CUDA device" and gives CUDA's reason.
//
// cudaGetDeviceCount leaves its argument untouched when it fails (e.g. cudaErrorInsufficientDriver
// without a driver), so every count here starts at 0 and the return code is checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace dtbench::gpu {

// Usable CUDA devices; 0 when the runtime reports an error (and the error is cleared).
int device_count();

// Why there is no usable device ("" when there is one), e.g.
// "cudaGetDeviceCount failed: cudaErrorInsufficientDriver (CUDA driver version is insufficient ...)".
std::string no_device_reason();

// Throws BadInput("<who>: no CUDA device: <reason>") unless a device is usable.
void require_device(const std::string& who);

// The node-local rank from the launcher's environment (see above), else `fallback`. A variable that is
// set but not a non-negative integer is BadInput naming it.
int local_rank_from_env(int fallback);

// Selects device local_rank % device_count() for the calling thread and returns its index. require_device
// first (BadInput naming `who`).
int select_device(int local_rank, const std::string& who);

// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)" for provenance lines and messages.
std::string device_description(int device);

// Device memory (cudaMalloc), zero-filled on allocation, freed on destruction. Not copyable.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return p_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host memory (cudaMallocHost), the source and target of asynchronous copies.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* get() const { return p_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace dtbench::gpu
