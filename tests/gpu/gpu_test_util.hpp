// Shared by the GPU tests: the device check that skips (or fails) a test that cannot run here, and comparisons.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/cuda/device.hpp"
#include "core/rng.hpp"
#include "tests/gpu/device_requirement.hpp"

// Runs the rest of the test only where `n` CUDA devices are usable; else skips it (CTest: skipped) or fails
// it, by the rule in device_requirement.hpp (a broken driver, or DTBENCH_EXPECT_GPU, turns a skip into a
// failure).
#define DTB_REQUIRE_DEVICES(n)                                                                   \
  do {                                                                                           \
    const ::dtbench::test::DeviceRequirement req_ = ::dtbench::test::device_requirement(n);      \
    if (req_.outcome == ::dtbench::test::DeviceRequirement::Outcome::fail) FAIL() << req_.message; \
    if (req_.outcome == ::dtbench::test::DeviceRequirement::Outcome::skip) GTEST_SKIP() << req_.message; \
  } while (0)
#define DTB_REQUIRE_DEVICE() DTB_REQUIRE_DEVICES(1)

namespace dtbench::test {

// max |a - b| / max |b|: the error relative to the reference's largest magnitude (0 for two zero tensors).
inline double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return scale > 0.0 ? diff / scale : diff;
}

// Cosine of the angle between two vectors (1 = same direction).
inline double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0.0, aa = 0.0, bb = 0.0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return aa > 0.0 && bb > 0.0 ? ab / std::sqrt(aa * bb) : 0.0;
}

// n floats uniform in [lo, hi) from dtbench::Rng(seed).
inline std::vector<float> random_floats(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = float(lo + (hi - lo) * rng.uniform());
  return v;
}

}  // namespace dtbench::test
