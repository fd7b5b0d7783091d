#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

#include "core/cuda_info.hpp"

namespace dtbench {

static std::string dotted(int v, int major_div, int minor_div, int minor_mod) {
  return std::to_string(v / major_div) + "." + std::to_string((v / minor_div) % minor_mod);
}

int cuda_device_count() {
  int count = 0;  // cudaGetDeviceCount leaves it untouched on error
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

Json cuda_info() {
  Json c;
  c["built"] = true;
  c["runtime_version"] = dotted(CUDART_VERSION, 1000, 10, 100);
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) c["driver_version"] = dotted(driver, 1000, 10, 100);
  else c["driver_version"] = nullptr;
  size_t cudnn = cudnnGetVersion();
  c["cudnn_version"] = std::to_string(cudnn / 10000) + "." + std::to_string((cudnn / 100) % 100) + "." +
                       std::to_string(cudnn % 100);
  int nccl = 0;
  ncclGetVersion(&nccl);
  c["nccl_version"] = std::to_string(nccl / 10000) + "." + std::to_string((nccl / 100) % 100) + "." +
                      std::to_string(nccl % 100);
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    c["device_count"] = 0;
    c["status"] = std::string("no CUDA device (") + cudaGetErrorString(err) + ")";
    cudaGetLastError();  // clear the sticky error for later callers
    return c;
  }
  c["device_count"] = count;
  c["status"] = count > 0 ? "ok" : "no CUDA device";
  Json devices = Json::array();
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    devices.push_back({{"index", i},
                       {"name", prop.name},
                       {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
                       {"memory_bytes", static_cast<int64_t>(prop.totalGlobalMem)}});
  }
  c["devices"] = devices;
  return c;
}

}  // namespace dtbench
