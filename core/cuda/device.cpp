#include "core/cuda/device.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda_info.hpp"
#include "core/error.hpp"

namespace dtbench::gpu {

void throw_failed_call(const std::string& library, const char* call, const char* file, int line,
                       const std::string& message) {
  int device = -1;
  cudaGetDevice(&device);
  throw RunFailed(library + " call failed on device " + std::to_string(device) + ": " + call + " (" + file + ":" +
                  std::to_string(line) + "): " + message);
}

void check_launch(const char* kernel, const char* file, int line) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    throw_failed_call("CUDA", kernel, file, line,
                      std::string("kernel launch: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  }
}

int device_count() { return cuda_devices().count; }

std::string no_device_reason() { return cuda_devices().reason; }

int require_device(const std::string& who) {
  const CudaDevices d = cuda_devices();
  if (d.state == CudaDevices::State::broken) throw BadInput(who + ": CUDA device unusable: " + d.reason);
  if (d.state != CudaDevices::State::usable) throw BadInput(who + ": no CUDA device: " + d.reason);
  return d.count;
}

int local_rank_from_env(int fallback) {
  // The MPI launcher's variables first: mpirun started inside a Slurm job passes its ranks the batch shell's
  // SLURM_LOCALID=0 (found by a review: every rank took GPU 0); srun sets SLURM_LOCALID per task.
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (*end != '\0' || r < 0 || r > 1 << 20) {
      throw BadInput(std::string("environment variable ") + name + "='" + v +
                     "' is not a local rank (a non-negative integer)");
    }
    return static_cast<int>(r);
  }
  return fallback;
}

int select_device(int local_rank, const std::string& who) {
  const int device = local_rank % require_device(who);
  DTB_CUDA(cudaSetDevice(device));
  return device;
}

std::string device_description(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    return "device " + std::to_string(device) + " (properties unavailable)";
  }
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.1f", static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " + gib +
         " GiB)";
}

void* allocate(Memory where, size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  if (where == Memory::device) {
    DTB_CUDA(cudaMalloc(&p, bytes));
    cudaError_t e = cudaMemset(p, 0, bytes);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();  // zero before any work stream reads it (see device.hpp)
    if (e != cudaSuccess) {
      cudaFree(p);  // not leaked when the zero-fill fails
      DTB_CUDA(e);
    }
  } else {
    DTB_CUDA(cudaMallocHost(&p, bytes));
  }
  return p;
}

void copy_to_device(void* device, const void* host, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  DTB_CUDA(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
  DTB_CUDA(cudaStreamSynchronize(stream));
}

void copy_to_host(void* host, const void* device, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  DTB_CUDA(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
  DTB_CUDA(cudaStreamSynchronize(stream));
}

void release(Memory where, void* p) noexcept {
  if (p == nullptr) return;
  if (where == Memory::device) cudaFree(p);
  else cudaFreeHost(p);
}

}  // namespace dtbench::gpu
