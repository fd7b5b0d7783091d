#include "core/cuda/device.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

#include "core/cuda/cuda_check.hpp"
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

namespace {

// count and the reason it is 0 (empty when the call succeeded).
std::pair<int, std::string> query_devices() {
  int count = 0;  // left untouched by a failing cudaGetDeviceCount
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear it, so later calls do not report it again
    return {0, std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")"};
  }
  if (count <= 0) return {0, "cudaGetDeviceCount reports 0 devices"};
  return {count, ""};
}

}  // namespace

int device_count() { return query_devices().first; }

std::string no_device_reason() { return query_devices().second; }

void require_device(const std::string& who) {
  const std::string reason = no_device_reason();
  if (!reason.empty()) throw BadInput(who + ": no CUDA device: " + reason);
}

int local_rank_from_env(int fallback) {
  for (const char* name : {"SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}) {
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
  require_device(who);
  const int device = local_rank % device_count();
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
    if (const cudaError_t e = cudaMemset(p, 0, bytes); e != cudaSuccess) {
      cudaFree(p);  // not leaked when the zero-fill fails
      DTB_CUDA(e);
    }
  } else {
    DTB_CUDA(cudaMallocHost(&p, bytes));
  }
  return p;
}

void release(Memory where, void* p) noexcept {
  if (p == nullptr) return;
  if (where == Memory::device) cudaFree(p);
  else cudaFreeHost(p);
}

}  // namespace dtbench::gpu
