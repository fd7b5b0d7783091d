// K-FAC (optim/kfac.hpp, optim/kfac_factors.hpp) against independent references:
//   - the factor statistics against their definition summed directly in double (no im2col, no GEMM);
//   - the damped inverses against the identity;
//   - three steps on the ResNet-8 and Simple CNN twins against the NumPy implementation of
//     workloads/reference/make_kfac_reference.py (written from the papers, in float64): the KL-clip factor nu of
//     every step, the weights after steps 1 and 3, the running factors after step 3;
//   - save and restore: bitwise the same steps after a restore as without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "optim/kfac.hpp"
#include "tests/workloads/torch_twins.hpp"
#include "workloads/models/optimizer_table.hpp"

namespace dtbench::test {
namespace {

// Omega and Gamma straight from the definitions in kfac_factors.hpp, in double.
void direct_factors(const optim::LayerActivity& a, std::vector<double>& omega, std::vector<double>& gamma) {
  const int kk = a.kernel * a.kernel;
  const size_t cols = size_t(a.in_c * kk), rows = size_t(a.out_c);
  const double t = double(a.out_h * a.out_w);
  const double big_n = a.batch > 0 ? a.batch : a.n;  // Ds = N dy: Gamma = (1/n) sum (1/T) sum Ds Ds^T
  omega.assign(cols * cols, 0.0);
  gamma.assign(rows * rows, 0.0);
  std::vector<double> patch(cols);
  for (int n = 0; n < a.n; ++n)
    for (int p = 0; p < a.out_h; ++p)
      for (int q = 0; q < a.out_w; ++q) {
        for (int c = 0; c < a.in_c; ++c)
          for (int r = 0; r < a.kernel; ++r)
            for (int s = 0; s < a.kernel; ++s) {
              const int h = p * a.stride - a.pad + r, w = q * a.stride - a.pad + s;
              const bool in = h >= 0 && h < a.in_h && w >= 0 && w < a.in_w;
              patch[size_t(c * kk + r * a.kernel + s)] =
                  in ? a.x[((size_t(n) * size_t(a.in_c) + size_t(c)) * size_t(a.in_h) + size_t(h)) * size_t(a.in_w) + size_t(w)]
                     : 0.0;
            }
        for (size_t i = 0; i < cols; ++i)
          for (size_t j = 0; j < cols; ++j) omega[i * cols + j] += patch[i] * patch[j] / a.n;
        auto dy = [&](size_t k) {
          return double(a.dy[((size_t(n) * rows + k) * size_t(a.out_h) + size_t(p)) * size_t(a.out_w) + size_t(q)]);
        };
        for (size_t i = 0; i < rows; ++i)
          for (size_t j = 0; j < rows; ++j) gamma[i * rows + j] += big_n * big_n / (double(a.n) * t) * dy(i) * dy(j);
      }
}

double max_rel(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::abs(double(got[i]) - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return err / scale;
}

// Every geometry the networks use: 3 x 3 padded, strided, 1 x 1 strided shortcuts, 5 x 5, and fully connected.
TEST(KfacFactors, MatchTheirDefinition) {
  struct Case {
    int n, in_c, in_h, out_c, kernel, stride, pad, batch = 0;
  };
  // Then: a 1 x 1 stride-2 convolution down to a 1 x 1 output (not the fully connected shortcut); factors wider
  // than one block of the symmetric product (24 x 9 = 216 columns, 130 rows: seven and five blocks of 32, the
  // upper triangle mirrored); images over several patch chunks (9 of 28 x 28 with 144 columns: 7 per chunk); and
  // two estimated from a subsample, the first n of `batch` images.
  for (const Case& k : {Case{3, 4, 7, 5, 3, 1, 1}, Case{2, 3, 9, 4, 3, 2, 1}, Case{2, 6, 8, 3, 1, 2, 0},
                        Case{2, 2, 6, 3, 5, 1, 2}, Case{5, 7, 1, 4, 1, 1, 0}, Case{70, 5, 4, 6, 3, 1, 1},
                        Case{2, 6, 2, 3, 1, 2, 0}, Case{2, 24, 3, 130, 3, 1, 1}, Case{9, 16, 28, 4, 3, 1, 1},
                        Case{3, 4, 5, 5, 3, 1, 1, 8}, Case{2, 6, 1, 3, 1, 1, 0, 5}}) {
    optim::LayerActivity a;
    a.n = k.n, a.in_c = k.in_c, a.in_h = a.in_w = k.in_h, a.out_c = k.out_c, a.batch = k.batch;
    a.kernel = k.kernel, a.stride = k.stride, a.pad = k.pad;
    a.out_h = a.out_w = (k.in_h + 2 * k.pad - k.kernel) / k.stride + 1;
    Rng rng(7, {uint64_t(k.n), uint64_t(k.in_c)});
    std::vector<float> x(size_t(a.n * a.in_c * a.in_h * a.in_w)), dy(size_t(a.n * a.out_c * a.out_h * a.out_w));
    for (float& v : x) v = float(rng.uniform() * 2 - 1);
    for (float& v : dy) v = float(rng.uniform() * 2 - 1);
    a.x = x.data(), a.dy = dy.data();
    const size_t cols = size_t(a.in_c * a.kernel * a.kernel), rows = size_t(a.out_c);
    std::vector<float> omega(cols * cols, 0.0f), gamma(rows * rows, 0.0f);
    optim::add_kronecker_factors(a, omega, gamma);
    std::vector<double> want_omega, want_gamma;
    direct_factors(a, want_omega, want_gamma);
    // fp32 sums of at most a few thousand products of values in [-1, 1]: well within 1e-5 of the largest entry.
    EXPECT_LE(max_rel(omega, want_omega), 1e-5) << k.kernel << " " << k.stride;
    EXPECT_LE(max_rel(gamma, want_gamma), 1e-5) << k.kernel << " " << k.stride;
    for (size_t i = 0; i < cols; ++i)
      for (size_t j = 0; j < cols; ++j) ASSERT_EQ(omega[i * cols + j], omega[j * cols + i]);  // mirrored exactly
    for (size_t i = 0; i < rows; ++i)
      for (size_t j = 0; j < rows; ++j) ASSERT_EQ(gamma[i * rows + j], gamma[j * rows + i]);
  }
}

TEST(KfacFactors, DampedInverseAndItsSplit) {
  const size_t dim = 37;
  Rng rng(3, {0});
  std::vector<double> b(dim * dim), m(dim * dim, 0.0);
  for (double& v : b) v = rng.uniform() - 0.5;
  for (size_t i = 0; i < dim; ++i)  // m = b b^T / dim: positive semidefinite, rank-deficient by construction below
    for (size_t j = 0; j < dim; ++j)
      for (size_t k = 0; k + 5 < dim; ++k) m[i * dim + j] += b[i * dim + k] * b[j * dim + k] / double(dim);
  std::vector<float> inv(dim * dim);
  const double d = 0.01;
  ASSERT_TRUE(optim::damped_inverse(m, dim, d, inv));
  // (m + d I) inv = I to the fp32 rounding of inv times the condition number (at most (|m| + d) / d ~ 100).
  for (size_t i = 0; i < dim; ++i)
    for (size_t j = 0; j < dim; ++j) {
      double s = 0;
      for (size_t k = 0; k < dim; ++k) s += (m[i * dim + k] + (i == k ? d : 0.0)) * double(inv[k * dim + j]);
      EXPECT_NEAR(s, i == j ? 1.0 : 0.0, 1e-4) << i << "," << j;
    }
  std::vector<double> bad = m;
  bad[0] = -1.0;
  EXPECT_FALSE(optim::damped_inverse(bad, dim, d, inv));
  // pi = sqrt((tr A / dim A) / (tr G / dim G)): A = 4 I_2, G = I_3 gives pi = 2.
  const std::vector<double> a4 = {4, 0, 0, 4}, g1 = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  const optim::FactorDamping split = optim::factored_damping(a4, 2, g1, 3, 0.04);
  EXPECT_DOUBLE_EQ(split.a, 2 * 0.2);
  EXPECT_DOUBLE_EQ(split.g, 0.2 / 2);
}

optim::KfacOptions options_from(const Json& m) {
  const Json& o = m["options"];
  optim::KfacOptions k;
  k.momentum = o["momentum"], k.damping = o["damping"], k.factor_decay = o["factor_decay"];
  k.factor_interval = o["factor_interval"], k.inverse_interval = o["inverse_interval"], k.kl_clip = o["kl_clip"];
  return k;
}

// max over tensors of max |w - ref| / max |ref - w0|.
double worst_update_error(const std::vector<models::ParamInfo>& table, std::span<const float> w,
                          const std::vector<float>& ref, const std::vector<float>& w0) {
  double worst = 0;
  for (const auto& t : table) {
    double err = 0, update = 0;
    for (size_t k = t.offset; k < t.offset + t.size; ++k) {
      err = std::max(err, std::abs(double(w[k]) - double(ref[k])));
      update = std::max(update, std::abs(double(ref[k]) - double(w0[k])));
    }
    worst = std::max(worst, err / update);
  }
  return worst;
}

// Three K-FAC steps on a twin against the NumPy reference. Tolerances: NumPy's own float32 run deviates from its
// float64 reference by about 1e-6 to 1e-5 of the update (manifest "numpy_float32_vs_float64"), but dtbench's
// gradients already differ from PyTorch's float64 ones by up to 2e-5 per tensor (test_torch_twins.cpp), and the
// damped inverses amplify that by up to their condition number. Seen here (the printed figures): nu within 3e-8,
// weights within 2.1e-4 of the update (the Simple CNN's first, unclipped step) and factors within 4.4e-6 of their
// largest entry. The bounds are about ten times those, and far below what an error in the formulas gives (a wrong
// damping split, a transposed factor or a missing N moves the weights by tens of percent of the update).
void compare_with_numpy(models::ModelSpec spec) {
  const std::string dir = reference_dir("kfac_" + spec.arch);
  const Json m = read_manifest(dir);
  spec.in_c = 1, spec.in_h = 28, spec.in_w = 28, spec.classes = 10;
  cpu::Model model(spec, 1);
  const Json twin = read_manifest(reference_dir(spec.arch));
  const uint64_t seed = twin["seed"].get<uint64_t>();
  initialise(model, seed);
  const std::vector<float> w0(model.params().begin(), model.params().end());
  optim::CommonOptions common;
  common.weight_decay = m["options"]["weight_decay"];
  common.no_decay_bn_bias = false;  // the reference decays every tensor
  optim::Kfac kfac(models::optimizer_table(model.param_table()), common, options_from(m));
  std::vector<std::string> names;
  for (const auto& l : kfac.layers()) names.push_back(model.param_table()[l.tensor].name);
  std::vector<std::string> ref_names;
  for (const auto& n : m["layers"]) ref_names.push_back(n.get<std::string>() + ".weight");
  ASSERT_EQ(names, ref_names);

  const size_t np = model.params().size();
  const std::vector<float> ref_w1 = read_f32(dir, "weights1.f32", np), ref_w3 = read_f32(dir, "weights3.f32", np);
  const int n = twin["batch"].get<int>();
  double worst_w1 = 0, worst_nu = 0;
  for (int step = 0; step < 3; ++step) {
    const Batch b = make_batch(seed, step, 28 * 28, n);
    model.forward(b.x.data(), b.labels.data(), n, true);
    ASSERT_TRUE(kfac.wants_statistics());
    model.backward({}, [&](const optim::LayerActivity& a) { kfac.observe(a); });
    ASSERT_FALSE(kfac.statistics().empty());
    kfac.step(model.params(), model.grads(), m["options"]["lr"].get<double>());
    const double ref_nu = m["nu"][size_t(step)].get<double>();
    worst_nu = std::max(worst_nu, std::abs(kfac.last_nu() - ref_nu) / ref_nu);
    EXPECT_NEAR(kfac.last_nu(), ref_nu, 1e-6 * ref_nu) << "step " << step + 1;
    if (step == 0) {
      worst_w1 = worst_update_error(model.param_table(), model.params(), ref_w1, w0);
      EXPECT_LE(worst_w1, 2e-3);
    }
  }
  const double worst_w3 = worst_update_error(model.param_table(), model.params(), ref_w3, w0);
  EXPECT_LE(worst_w3, 2e-3);

  size_t total = 0;
  for (const auto& l : kfac.layers()) total += l.cols * l.cols + l.rows * l.rows;
  const std::vector<float> ref_f = read_f32(dir, "factors3.f32", total);
  double worst_f = 0;
  size_t at = 0;
  for (size_t l = 0; l < kfac.layers().size(); ++l) {
    for (const std::vector<double>* f : {&kfac.factor_a(l), &kfac.factor_g(l)}) {
      double err = 0, scale = 0;
      for (size_t i = 0; i < f->size(); ++i) {
        err = std::max(err, std::abs((*f)[i] - double(ref_f[at + i])));
        scale = std::max(scale, std::abs(double(ref_f[at + i])));
      }
      at += f->size();
      worst_f = std::max(worst_f, err / scale);
      EXPECT_LE(err / scale, 5e-5) << names[l];
    }
  }
  std::printf("%s: nu rel err %.2e, weights after step 1 %.2e and step 3 %.2e of the update, factors %.2e\n",
              spec.arch.c_str(), worst_nu, worst_w1, worst_w3, worst_f);
}

TEST(KfacReference, ResNet8WithKlClip) {
  models::ModelSpec spec;
  spec.arch = "resnet8";
  compare_with_numpy(spec);
}

TEST(KfacReference, SimpleCnnUnclipped) {
  models::ModelSpec spec;
  spec.arch = "simple_cnn";
  spec.conv_filters = {4, 8};
  spec.hidden = 32;
  compare_with_numpy(spec);
}

// A restored K-FAC takes bitwise the same steps: factors, inverses and momentum all travel in the state. The
// cadence (statistics every 2 steps, inverses every 3) puts the save between refreshes.
TEST(Kfac, SaveRestoreIsExact) {
  models::ModelSpec spec;
  spec.arch = "resnet8";
  spec.in_c = 1, spec.in_h = 12, spec.in_w = 12, spec.classes = 10;
  optim::KfacOptions o;
  o.factor_interval = 2, o.inverse_interval = 3;
  auto run = [&](cpu::Model& model, optim::Kfac& kfac, int from, int to) {
    for (int step = from; step < to; ++step) {
      const Batch b = make_batch(5, step, 12 * 12, 6);
      model.forward(b.x.data(), b.labels.data(), 6, true);
      if (kfac.wants_statistics()) model.backward({}, [&](const optim::LayerActivity& a) { kfac.observe(a); });
      else model.backward();
      kfac.step(model.params(), model.grads(), 0.05);
    }
  };
  cpu::Model a(spec, 9), b(spec, 9);
  optim::Kfac ka(models::optimizer_table(a.param_table()), {}, o);
  run(a, ka, 0, 4);
  const std::vector<uint8_t> state = ka.save_state();
  std::copy(a.params().begin(), a.params().end(), b.params().begin());
  std::copy(a.buffers().begin(), a.buffers().end(), b.buffers().begin());
  optim::Kfac kb(models::optimizer_table(b.param_table()), {}, o);
  kb.load_state(state);
  EXPECT_EQ(kb.save_state(), state);
  run(a, ka, 4, 9);
  run(b, kb, 4, 9);
  for (size_t i = 0; i < a.params().size(); ++i) ASSERT_EQ(a.params()[i], b.params()[i]) << i;
  // A truncated state names the byte where it ends.
  std::vector<uint8_t> cut(state.begin(), state.begin() + std::ptrdiff_t(state.size() / 2));
  EXPECT_THROW(kb.load_state(cut), BadInput);
}

// statistics_images: the factors of the first m images of a batch of N, with dy scaled for N (kfac_factors.hpp).
TEST(Kfac, StatisticsFromTheFirstImages) {
  models::ModelSpec spec;
  spec.arch = "mlp";
  spec.hidden = 16;
  spec.in_h = spec.in_w = 4;
  cpu::Model model(spec, 1);
  const optim::ParamTable table = models::optimizer_table(model.param_table());
  optim::KfacOptions sub;
  sub.statistics_images = 2;
  optim::Kfac subsampled(table, {}, sub), manual(table, {}, {});
  const Batch b = make_batch(3, 0, 16, 5);
  model.forward(b.x.data(), b.labels.data(), 5, true);
  model.backward({}, [&](const optim::LayerActivity& a) {
    subsampled.observe(a);
    optim::LayerActivity first = a;
    first.n = 2, first.batch = 5;
    manual.observe(first);
  });
  const std::span<float> s = subsampled.statistics(), m = manual.statistics();
  ASSERT_EQ(s.size(), m.size());
  for (size_t i = 0; i < s.size(); ++i) ASSERT_EQ(s[i], m[i]) << i;
}

TEST(Kfac, RefusesBadOptionsAndMissingStatistics) {
  models::ModelSpec spec;
  spec.arch = "mlp";
  spec.hidden = 16;
  cpu::Model model(spec, 1);
  const optim::ParamTable table = models::optimizer_table(model.param_table());
  auto with = [](auto set) {
    optim::KfacOptions o;
    set(o);
    return o;
  };
  EXPECT_THROW(optim::Kfac(table, {}, with([](auto& o) { o.damping = 0; })), BadInput);
  EXPECT_THROW(optim::Kfac(table, {}, with([](auto& o) { o.factor_interval = 0; })), BadInput);
  EXPECT_THROW(optim::Kfac(table, {}, with([](auto& o) { o.inverse_interval = 0; })), BadInput);
  EXPECT_THROW(optim::Kfac(table, {}, with([](auto& o) { o.factor_decay = 1; })), BadInput);
  EXPECT_THROW(optim::Kfac(table, {}, with([](auto& o) { o.kl_clip = -1; })), BadInput);
  EXPECT_THROW(optim::Kfac(table, {}, with([](auto& o) { o.statistics_images = -1; })), BadInput);
  // A step whose backward reported no statistics is a programming error, not a silent plain step.
  optim::Kfac kfac(table, {}, {});
  EXPECT_THROW(kfac.step(model.params(), model.grads(), 0.1), std::logic_error);
  // A weight table without shapes cannot be preconditioned.
  std::vector<optim::TensorInfo> shapeless = table.tensors();
  for (auto& t : shapeless) t.rows = 0;
  EXPECT_THROW(optim::Kfac(optim::ParamTable(shapeless), {}, {}), BadInput);
}

}  // namespace
}  // namespace dtbench::test
