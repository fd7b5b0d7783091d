#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

#include "core/cuda_info.hpp"

namespace dtbench {

static std::string dotted(int v, int major_div, int minor_div, int minor_mod) {
  return std::to_string(v / major_div) + "." + std::to_string((v / minor_div) % minor_mod);
}

CudaDevices cuda_devices() {
  int count = 0;  // cudaGetDeviceCount leaves it untouched on error
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) cudaGetLastError();  // clear it, so later calls do not report it again
  int driver = 0;  // 0 when no driver is installed
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  return classify_cuda_devices(int(e), cudaGetErrorName(e), cudaGetErrorString(e), count, driver, CUDART_VERSION);
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
  const CudaDevices d = cuda_devices();
  const int count = d.count;
  c["device_count"] = count;
  switch (d.state) {
    case CudaDevices::State::usable: c["status"] = "ok"; break;
    case CudaDevices::State::absent: c["status"] = "no CUDA device (" + d.reason + ")"; break;
    case CudaDevices::State::broken: c["status"] = "CUDA device unusable (" + d.reason + ")"; break;
  }
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
