// What the tests against make_torch_reference.py's twins share (test_torch_twins.cpp, test_kfac.cpp): the
// reference files and the initial weights and batches, regenerated from the same SplitMix64 streams.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/rng.hpp"
#include "workloads/cpu/model.hpp"

namespace dtbench::test {

inline std::string reference_dir(const std::string& name) {
  return std::string(DTBENCH_SOURCE_DIR) + "/workloads/reference/" + name + "/";
}

inline std::vector<float> read_f32(const std::string& dir, const std::string& name, size_t count) {
  std::ifstream f(dir + name, std::ios::binary);
  EXPECT_TRUE(f.good()) << dir + name;
  std::vector<float> v(count);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(count * sizeof(float)));
  EXPECT_EQ(size_t(f.gcount()), count * sizeof(float)) << name;
  return v;
}

inline Json read_manifest(const std::string& dir) {
  std::ifstream f(dir + "manifest.json");
  EXPECT_TRUE(f.good());
  return Json::parse(f);
}

// max |a - b| / max |b| over [offset, offset + size).
inline double rel_err(const float* a, const float* b, size_t size) {
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < size; ++i) {
    err = std::max(err, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return scale > 0 ? err / scale : err;
}

// The initial weights of make_torch_reference.py, from the same generator.
inline void initialise(cpu::Model& model, uint64_t seed) {
  const auto& table = model.param_table();
  std::span<float> w = model.params();
  for (size_t i = 0; i < table.size(); ++i) {
    const models::ParamInfo& t = table[i];
    Rng rng(seed, {uint64_t(i)});
    const bool gamma = t.kind == models::ParamInfo::bn && t.name.ends_with(".weight");
    for (size_t k = 0; k < t.size; ++k) {
      const double u = rng.uniform();
      double v;
      if (t.kind == models::ParamInfo::conv_weight || t.kind == models::ParamInfo::fc_weight) {
        v = (2.0 * u - 1.0) * std::sqrt(6.0 / double(t.size / size_t(t.shape[0])));
      } else if (t.kind == models::ParamInfo::bn) {
        v = gamma ? 1.0 + (2.0 * u - 1.0) * 0.2 : (2.0 * u - 1.0) * 0.1;
      } else {
        v = (2.0 * u - 1.0) * 0.1;
      }
      w[t.offset + k] = float(v);
    }
  }
}

struct Batch {
  std::vector<float> x;
  std::vector<int32_t> labels;
};

inline Batch make_batch(uint64_t seed, int step, size_t image, int n) {
  Batch b;
  Rng rx(seed, {uint64_t(1000 + step)});
  b.x.resize(image * size_t(n));
  for (float& v : b.x) v = float((rx.uniform() - 0.5) * 4.0);
  Rng rl(seed, {uint64_t(2000 + step)});
  for (int i = 0; i < n; ++i) b.labels.push_back(int32_t(rl.below(10)));
  return b;
}

}  // namespace dtbench::test
