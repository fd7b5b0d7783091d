// classify_cuda_devices (core/cuda_info.hpp): plain integers in, so it builds and is tested with or without CUDA.
#include "core/cuda_info.hpp"

namespace dtbench {

namespace {
constexpr int kSuccess = 0;              // cudaSuccess
constexpr int kInsufficientDriver = 35;  // cudaErrorInsufficientDriver
constexpr int kNoDevice = 100;           // cudaErrorNoDevice

std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }
}  // namespace

CudaDevices classify_cuda_devices(int status, const std::string& status_name, const std::string& status_text,
                                  int count, int driver_version, int runtime_version) {
  using State = CudaDevices::State;
  const std::string call = "cudaGetDeviceCount: " + status_name + ": " + status_text;
  if (status == kSuccess) {
    if (count > 0) return {State::usable, count, ""};
    return {State::absent, 0, "cudaGetDeviceCount reports 0 devices"};
  }
  if (status == kNoDevice) return {State::absent, 0, call};
  if (status == kInsufficientDriver && driver_version <= 0) {
    // The runtime's answer when libcuda is not there at all: a machine without a driver, not a broken one.
    return {State::absent, 0, "no CUDA driver is installed (cudaGetDeviceCount: " + status_name + ")"};
  }
  if (status == kInsufficientDriver) {
    return {State::broken, 0,
            "the installed driver supports CUDA " + cuda_version(driver_version) + ", older than the CUDA " +
                cuda_version(runtime_version) + " runtime this dtbench was built with (cudaGetDeviceCount: " +
                status_name + "); update the driver"};
  }
  return {State::broken, 0, call};
}

}  // namespace dtbench
