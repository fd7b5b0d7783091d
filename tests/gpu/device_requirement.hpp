// Whether a GPU test runs, is skipped or fails on this machine: the one rule every GPU test follows (the
// gtest cases through DTB_REQUIRE_DEVICES, gpu_nccl_mpi_2ranks, and train.gpu's Python twin in
// tests/train/train_checks.py).
//
//   - The CUDA runtime cannot use the installed driver (cuda_devices() is broken, e.g. a driver older than
//     the toolkit): fail. Such a node has GPUs; reporting its tests skipped would make a broken GPU node green.
//   - Fewer usable devices than the test needs: skip, saying why ("no CUDA device: ..." or "needs 2 CUDA
//     devices, 1 present").
//   - Unless DTBENCH_EXPECT_GPU=N (N >= 1; set it in GPU CI jobs) says the machine has at least N devices:
//     then a test needing at most N devices that cannot run fails instead of skipping. A test needing more
//     than N (NCCL with two ranks on a one-GPU machine) still skips.
//   - DTBENCH_EXPECT_GPU unset, empty or 0: no expectation. Anything else that is not an integer in
//     [0, 1024] fails every GPU test with a message naming the variable.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/cuda_info.hpp"

namespace dtbench::test {

struct DeviceRequirement {
  enum class Outcome { run, skip, fail };
  Outcome outcome = Outcome::run;
  std::string message;  // why it is skipped or fails ("" when it runs)
};

// What a test needing `needed` devices does here, given the devices and DTBENCH_EXPECT_GPU's value (nullptr
// when unset).
inline DeviceRequirement device_requirement(int needed, const CudaDevices& d, const char* expect_env) {
  using Outcome = DeviceRequirement::Outcome;
  long expected = 0;
  if (expect_env != nullptr && *expect_env != '\0') {
    // Digits only (strtol alone would take " 1", "+1" and overflow).
    bool digits = std::strlen(expect_env) <= 4;
    for (const char* c = expect_env; digits && *c != '\0'; ++c) digits = *c >= '0' && *c <= '9';
    if (digits) expected = std::strtol(expect_env, nullptr, 10);
    if (!digits || expected > 1024) {
      return {Outcome::fail, std::string("DTBENCH_EXPECT_GPU='") + expect_env +
                                 "' is not a device count (an integer in [0, 1024])"};
    }
  }
  if (d.state == CudaDevices::State::broken) return {Outcome::fail, "CUDA device unusable: " + d.reason};
  if (d.count >= needed) return {Outcome::run, ""};
  std::string why = d.count == 0 ? "no CUDA device: " + d.reason
                                 : "needs " + std::to_string(needed) + " CUDA devices, " + std::to_string(d.count) +
                                       " present";
  if (needed <= expected) {
    return {Outcome::fail, why + " (DTBENCH_EXPECT_GPU=" + std::to_string(expected) + " says there are " +
                               std::to_string(expected) + ")"};
  }
  return {Outcome::skip, why};
}

inline DeviceRequirement device_requirement(int needed) {
  return device_requirement(needed, cuda_devices(), std::getenv("DTBENCH_EXPECT_GPU"));
}

}  // namespace dtbench::test
