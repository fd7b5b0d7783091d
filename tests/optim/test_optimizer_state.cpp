// Optimizer state and step contract: bitwise save/restore, results independent of the thread count,
// NaN/Inf gradients refused before anything is written, clipping, the per-tensor decay rule and SGLD's
// noise.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/rng.hpp"
#include "optim/clip.hpp"
#include "optim/kfac.hpp"
#include "optim/lamb.hpp"
#include "optim/lars.hpp"
#include "optim/optimizer.hpp"
#include "optim/sgld.hpp"
#include "optim/state_io.hpp"

namespace dtbench::optim {
namespace {

// A configuration of each optimizer with all of its state in use (momentum, centring, clipping).
Json config_for(const std::string& name) {
  Json c = {{"name", name}, {"lr", 0.01}, {"weight_decay", 0.01}};
  if (name == "sgd") c["nesterov"] = true;
  if (name == "rmsprop") {
    c["momentum"] = 0.5;
    c["centered"] = true;
  }
  if (name == "dcasgd") c["momentum"] = 0.5;
  if (name == "lamb") c["trust_clip"] = 5.0;
  if (name == "adam") c["clip_grad_norm"] = 1.0;
  if (name == "lars") c["clip_grad_value"] = 0.5;
  if (name == "kfac") {  // statistics and inverses inside the tests' few steps
    c["factor_interval"] = 2;
    c["inverse_interval"] = 3;
    c["clip_grad_norm"] = 1.0;
  }
  return c;
}

// Several tensors of each kind; `scale` multiplies the sizes (scale 40 puts the buffer above
// Optimizer::kParallelMinElements, so the OpenMP path runs). Every weight is a matrix of about square shape,
// rows x cols (K-FAC's factors are cols^2 and rows^2), its size rounded down to one.
ParamTable make_table(size_t scale) {
  std::vector<TensorInfo> t;
  size_t offset = 0;
  auto add = [&](const std::string& name, size_t size, TensorKind kind) {
    size_t rows = 0;
    if (kind == TensorKind::conv_weight || kind == TensorKind::fc_weight) {
      rows = static_cast<size_t>(std::sqrt(double(size)));
      size = rows * (size / rows);
    }
    t.push_back({name, offset, size, kind, rows});
    offset += size;
  };
  add("conv1.weight", 1728 * scale, TensorKind::conv_weight);
  add("bn1.gamma", 64, TensorKind::bn);
  add("bn1.beta", 64, TensorKind::bn);
  add("conv2.weight", 36864 * scale / 10 + 1, TensorKind::conv_weight);
  add("fc.weight", 640 * scale, TensorKind::fc_weight);
  add("fc.bias", 1, TensorKind::bias);
  add("zero.weight", 7, TensorKind::conv_weight);
  return ParamTable(std::move(t));
}

std::vector<float> random_vector(size_t n, uint64_t seed, double scale) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(scale * rng.normal());
  return v;
}

// K-FAC's statistics for the next step, where a model's backward would give them: every weight as a fully
// connected layer of 3 images with random inputs and output gradients (seeded by the step).
void feed_statistics(Optimizer& opt, int step) {
  auto* kfac = dynamic_cast<Kfac*>(&opt);
  if (kfac == nullptr || !kfac->wants_statistics()) return;
  for (const Kfac::Layer& l : kfac->layers()) {
    LayerActivity a;
    a.weight_offset = opt.table()[l.tensor].offset;
    a.n = 3, a.in_c = int(l.cols), a.out_c = int(l.rows);
    const std::vector<float> x = random_vector(3 * l.cols, 500 + uint64_t(step), 1.0);
    const std::vector<float> dy = random_vector(3 * l.rows, 700 + uint64_t(step), 0.1);
    a.x = x.data(), a.dy = dy.data();
    kfac->observe(a);
  }
}

// Runs `steps` steps from fixed weights and per-step random gradients.
void run(Optimizer& opt, std::vector<float>& w, int first_step, int steps) {
  for (int s = first_step; s < first_step + steps; ++s) {
    feed_statistics(opt, s);
    std::vector<float> g = random_vector(w.size(), 1000 + static_cast<uint64_t>(s), 0.1);
    if (opt.uses_weight_backup()) {
      std::vector<float> bak = w;
      for (float& x : bak) x *= 0.999f;
      opt.step(w, g, 0.01 * (1.0 + 0.1 * s), bak);
    } else {
      opt.step(w, g, 0.01 * (1.0 + 0.1 * s));
    }
  }
}

class EveryOptimizer : public ::testing::TestWithParam<std::string> {};

// After a save/restore round trip into a fresh optimizer the next step is bitwise identical.
TEST_P(EveryOptimizer, SaveRestoreGivesBitwiseIdenticalNextStep) {
  const ParamTable table = make_table(1);
  auto a = make_optimizer(config_for(GetParam()), table, 7);
  std::vector<float> w = random_vector(table.buffer_size(), 1, 0.5);
  run(*a, w, 0, 7);
  const std::vector<uint8_t> saved = a->save_state();
  const std::vector<float> w_saved = w;

  run(*a, w, 7, 2);
  const std::vector<float> w_a = w;
  const std::vector<uint8_t> state_a = a->save_state();

  auto b = make_optimizer(config_for(GetParam()), table, 7);
  b->load_state(saved);
  EXPECT_EQ(b->steps_taken(), 7);
  w = w_saved;
  run(*b, w, 7, 2);
  ASSERT_EQ(std::memcmp(w.data(), w_a.data(), w.size() * sizeof(float)), 0);
  EXPECT_EQ(b->save_state(), state_a);
}

// Chunk reductions are summed in chunk order, and elementwise work does not depend on the split, so
// one and two threads give the same bits.
TEST_P(EveryOptimizer, ResultIndependentOfThreadCount) {
  const ParamTable table = make_table(40);
  ASSERT_GE(table.num_params(), Optimizer::kParallelMinElements);
  std::vector<std::vector<float>> results;
  const int saved_threads = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    auto opt = make_optimizer(config_for(GetParam()), table, 7);
    std::vector<float> w = random_vector(table.buffer_size(), 1, 0.5);
    run(*opt, w, 0, 3);
    results.push_back(w);
  }
  omp_set_num_threads(saved_threads);
  for (size_t r = 1; r < results.size(); ++r) {
    ASSERT_EQ(std::memcmp(results[0].data(), results[r].data(), results[0].size() * sizeof(float)), 0);
  }
}

// A NaN or Inf gradient is reported (with the tensor and element) before any weight or state is
// written, and the optimizer carries on normally afterwards.
TEST_P(EveryOptimizer, NonFiniteGradientIsRefusedBeforeAnyWrite) {
  for (bool big : {false, true}) {
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity()}) {
      const ParamTable table = make_table(big ? 40 : 1);
      auto opt = make_optimizer(config_for(GetParam()), table, 7);
      std::vector<float> w = random_vector(table.buffer_size(), 1, 0.5);
      run(*opt, w, 0, 2);
      const std::vector<uint8_t> state = opt->save_state();
      const std::vector<float> w_before = w;
      std::vector<float> g = random_vector(w.size(), 99, 0.1);
      const TensorInfo& fc = table[4];
      g[fc.offset + 17] = bad;
      // K-FAC: this step's statistics are taken and handed over, as the trainer does, before the refusal; the
      // retry below gathers them again.
      feed_statistics(*opt, 2);
      if (auto* kfac = dynamic_cast<Kfac*>(opt.get())) {
        EXPECT_FALSE(kfac->statistics().empty());
      }
      try {
        opt->step(w, g, 0.01, w_before);
        FAIL() << "no exception for " << bad;
      } catch (const NonFiniteGradient& e) {
        EXPECT_EQ(e.tensor(), "fc.weight");
        EXPECT_EQ(e.index(), 17u);
        EXPECT_EQ(e.step(), 3);
        EXPECT_EQ(e.code(), ExitCode::run_failed);
        EXPECT_NE(std::string(e.what()).find("fc.weight[17]"), std::string::npos) << e.what();
      }
      EXPECT_EQ(std::memcmp(w.data(), w_before.data(), w.size() * sizeof(float)), 0);
      EXPECT_EQ(opt->save_state(), state);
      EXPECT_EQ(opt->steps_taken(), 2);
      g[fc.offset + 17] = 0.0f;
      feed_statistics(*opt, 2);
      opt->step(w, g, 0.01);
      for (float x : w) ASSERT_TRUE(std::isfinite(x));
    }
  }
}

// A NaN in a saved buffer (its last element here) is refused naming the byte, and the optimizer is left as it was;
// an infinity is taken (a saturated accumulator, state_io.cpp). Optimizers without buffers (SGLD) have nothing to
// poison.
TEST_P(EveryOptimizer, NanInSavedStateIsRefusedNamingTheByte) {
  const ParamTable table = make_table(1);
  auto a = make_optimizer(config_for(GetParam()), table, 7);
  std::vector<float> w = random_vector(table.buffer_size(), 1, 0.5);
  run(*a, w, 0, 3);
  const std::vector<uint8_t> saved = a->save_state();
  StateWriter header;
  put_state_header(header, a->name(), table.fingerprint(), 3);
  if (saved.size() == header.take().size()) GTEST_SKIP() << GetParam() << " keeps no buffers";
  auto b = make_optimizer(config_for(GetParam()), table, 7);
  const std::vector<uint8_t> before = b->save_state();
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<uint8_t> poisoned = saved;
    std::memcpy(poisoned.data() + poisoned.size() - sizeof(float), &bad, sizeof(float));
    if (std::isnan(bad)) {
      try {
        b->load_state(poisoned);
        FAIL() << "a NaN was loaded";
      } catch (const BadInput& e) {
        const std::string at = "NaN at byte " + std::to_string(saved.size() - sizeof(float));
        EXPECT_NE(std::string(e.what()).find(at), std::string::npos) << e.what();
      }
      EXPECT_EQ(b->save_state(), before);
    } else {
      b->load_state(poisoned);
      EXPECT_EQ(b->save_state(), poisoned);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, EveryOptimizer, ::testing::ValuesIn(optimizer_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(OptimizerState, RestoreRejectsOtherOptimizerTableAndTruncation) {
  const ParamTable table = make_table(1);
  auto adam = make_optimizer(config_for("adam"), table);
  std::vector<float> w = random_vector(table.buffer_size(), 1, 0.5);
  run(*adam, w, 0, 3);
  const std::vector<uint8_t> saved = adam->save_state();

  auto sgd = make_optimizer(config_for("sgd"), table);
  EXPECT_THROW(sgd->load_state(saved), BadInput);

  std::vector<TensorInfo> other = table.tensors();
  other[1].kind = TensorKind::conv_weight;
  auto adam_other = make_optimizer(config_for("adam"), ParamTable(other));
  EXPECT_THROW(adam_other->load_state(saved), BadInput);

  // A truncated state names the byte offset and leaves the optimizer as it was.
  auto fresh = make_optimizer(config_for("adam"), table);
  run(*fresh, w, 0, 1);
  const std::vector<uint8_t> before = fresh->save_state();
  std::vector<uint8_t> cut(saved.begin(), saved.end() - 5);
  try {
    fresh->load_state(cut);
    FAIL() << "no exception";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("byte"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fresh->save_state(), before);
  std::vector<uint8_t> longer = saved;
  longer.push_back(0);
  EXPECT_THROW(fresh->load_state(longer), BadInput);
  EXPECT_EQ(fresh->save_state(), before);

  // A damaged name length (a format-1 checkpoint has no checksum) read 200 bytes of floats as the optimizer's name
  // and printed them, a newline among them; the message now says what they are, on one line.
  for (const std::string& bad : {std::string("sgd\x92\n\xa2", 6), std::string(65, 'a'), std::string()}) {
    StateWriter w;
    put_state_header(w, bad, table.fingerprint(), 3);
    const std::vector<uint8_t> bytes = w.take();
    StateReader r(bytes);
    try {
      get_state_header(r, "sgd", table.fingerprint());
      FAIL() << "a name of " << bad.size() << " bytes was read";
    } catch (const BadInput& e) {
      EXPECT_EQ(std::string(e.what()), "optimizer state: damaged: the optimizer's name is " +
                                           std::to_string(bad.size()) + " bytes that are not a name");
    }
  }
}

// --init-from may change the momentum (README, "Run configs"): a state saved without a momentum buffer continues into
// an optimizer with one, which starts it as torch starts a missing buffer, with the next gradient (the same step as
// a new optimizer's first, bitwise, dampening included); a saved buffer an optimizer without momentum keeps none of
// is dropped (its steps are plain SGD's). RMSprop's and DC-ASGD's switched buffers start at 0, as new ones do.
TEST(OptimizerState, RestoreAcrossAMomentumSwitch) {
  const ParamTable table = make_table(1);
  const Json plain = {{"name", "sgd"}, {"lr", 0.01}, {"momentum", 0}, {"weight_decay", 0.01}};  // 0.9 by default
  Json heavy = plain;
  heavy["momentum"] = 0.9;
  heavy["dampening"] = 0.5;
  std::vector<float> w0 = random_vector(table.buffer_size(), 1, 0.5);
  auto with = make_optimizer(heavy, table), without = make_optimizer(plain, table);
  std::vector<float> w = w0;
  run(*with, w, 0, 3);
  const std::vector<uint8_t> saved_with = with->save_state();
  w = w0;
  run(*without, w, 0, 3);
  const std::vector<uint8_t> saved_without = without->save_state();

  // No buffer saved: the next step is a new optimizer's first.
  auto continued = make_optimizer(heavy, table), fresh = make_optimizer(heavy, table);
  continued->load_state(saved_without);
  EXPECT_EQ(continued->save_state(), saved_without);  // not started yet: saved as none again
  std::vector<float> a = w0, b = w0;
  run(*continued, a, 3, 1);
  run(*fresh, b, 3, 1);
  ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  EXPECT_EQ(continued->steps_taken(), 4);
  run(*continued, a, 4, 1);
  run(*fresh, b, 4, 1);
  ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);

  // A buffer saved, none kept: plain SGD's step.
  auto dropped = make_optimizer(plain, table), plain_fresh = make_optimizer(plain, table);
  dropped->load_state(saved_with);
  a = w0, b = w0;
  run(*dropped, a, 3, 1);
  run(*plain_fresh, b, 3, 1);
  ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);

  for (const char* name : {"rmsprop", "dcasgd"}) {
    Json off = {{"name", name}, {"lr", 0.01}, {"momentum", 0}}, on = off;
    on["momentum"] = 0.5;
    if (std::string(name) == "rmsprop") on["centered"] = true;
    auto from = make_optimizer(off, table), to = make_optimizer(on, table), back = make_optimizer(off, table);
    std::vector<float> x = w0;
    run(*from, x, 0, 2);
    EXPECT_NO_THROW(to->load_state(from->save_state())) << name;
    // The state ends with the switched-on buffers (RMSprop: the mean gradient, then the momentum buffer, each a
    // uint64 count and its floats; DC-ASGD: the momentum buffer): all zeros, as a new optimizer's.
    const std::vector<uint8_t> state = to->save_state();
    const size_t n = table.buffer_size(), arrays = std::string(name) == "rmsprop" ? 2 : 1;
    ASSERT_GE(state.size(), arrays * (8 + n * sizeof(float)));
    for (size_t a = 0; a < arrays; ++a) {
      const size_t end = state.size() - a * (8 + n * sizeof(float));
      std::vector<float> tail(n);
      std::memcpy(tail.data(), state.data() + end - n * sizeof(float), n * sizeof(float));
      for (float v : tail) ASSERT_EQ(v, 0.0f) << name << ", array " << a << " from the end";
    }
    EXPECT_NO_THROW(back->load_state(to->save_state())) << name;
    EXPECT_EQ(back->save_state(), from->save_state()) << name;
  }
}

TEST(OptimizerRules, NoWeightDecayOnBnAndBiasByDefault) {
  const ParamTable table = make_table(1);
  auto on = make_optimizer({{"name", "sgd"}, {"lr", 0.1}, {"weight_decay", 0.5}}, table);
  auto off = make_optimizer({{"name", "sgd"}, {"lr", 0.1}, {"weight_decay", 0.5}, {"no_decay_bn_bias", false}}, table);
  for (size_t i = 0; i < table.num_tensors(); ++i) {
    const bool exempt = is_bn_or_bias(table[i].kind);
    EXPECT_EQ(on->weight_decay(i), exempt ? 0.0 : 0.5) << table[i].name;
    EXPECT_EQ(off->weight_decay(i), 0.5) << table[i].name;
  }
  auto adamw = make_optimizer({{"name", "adamw"}, {"lr", 0.1}}, table);
  EXPECT_EQ(adamw->weight_decay(0), 0.01);  // AdamW's documented default
}

// LARS and LAMB report trust 1 for excluded and zero-norm tensors, and the closed form elsewhere.
TEST(OptimizerRules, LarsTrustRatioClosedForm) {
  std::vector<TensorInfo> t = {{"w", 0, 2, TensorKind::conv_weight},
                               {"b", 2, 1, TensorKind::bias},
                               {"z", 3, 2, TensorKind::fc_weight}};
  Lars lars(ParamTable(t), CommonOptions{0.1, true, 0.0, 0.0}, LarsOptions{0.9, 0.5, 0.0, true});
  std::vector<float> w = {3.0f, 4.0f, 2.0f, 0.0f, 0.0f};  // ||w|| = 5 for "w"
  std::vector<float> g = {0.0f, 1.0f, 1.0f, 1.0f, 0.0f};  // ||g|| = 1
  lars.step(w, g, 1.0);
  EXPECT_DOUBLE_EQ(lars.last_trust()[0], 0.5 * 5.0 / (1.0 + 0.1 * 5.0));
  EXPECT_EQ(lars.last_trust()[1], 1.0);  // bias: excluded
  EXPECT_EQ(lars.last_trust()[2], 1.0);  // ||w|| = 0
  // First step, v = lr * trust * (g + beta w); w -= v.
  const double trust = 0.5 * 5.0 / 1.5;
  EXPECT_FLOAT_EQ(w[0], static_cast<float>(3.0 - trust * (0.0 + 0.1 * 3.0)));
  EXPECT_FLOAT_EQ(w[1], static_cast<float>(4.0 - trust * (1.0 + 0.1 * 4.0)));
  EXPECT_FLOAT_EQ(w[2], 1.0f);  // bias: plain step, no decay
}

TEST(OptimizerRules, LambFirstStepClosedForm) {
  // On the first step with bias correction m^ = g and v^ = g^2, so r = g / (|g| + eps) ~ sign(g).
  std::vector<TensorInfo> t = {{"w", 0, 2, TensorKind::fc_weight}};
  Lamb lamb(ParamTable(t), CommonOptions{0.0, true, 0.0, 0.0}, LambOptions{0.9, 0.999, 1e-6, true, 0.0, true});
  std::vector<float> w = {3.0f, 4.0f};
  std::vector<float> g = {2.0f, -0.5f};
  lamb.step(w, g, 0.1);
  const double r0 = 2.0 / (2.0 + 1e-6), r1 = -0.5 / (0.5 + 1e-6);
  const double trust = 5.0 / std::sqrt(r0 * r0 + r1 * r1);
  EXPECT_NEAR(lamb.last_trust()[0], trust, 1e-6);
  EXPECT_NEAR(w[0], 3.0 - 0.1 * trust * r0, 1e-6);
  EXPECT_NEAR(w[1], 4.0 - 0.1 * trust * r1, 1e-6);
}

TEST(Clip, NormScaleMatchesTorchFormula) {
  EXPECT_EQ(clip_norm_scale(5.0, 0.0), 1.0);  // off
  EXPECT_EQ(clip_norm_scale(0.5, 1.0), 1.0);  // within
  EXPECT_DOUBLE_EQ(clip_norm_scale(4.0, 2.0), 2.0 / (4.0 + 1e-6));
  const GradTransform t = make_grad_transform(2.0, 0.3, 4.0);
  EXPECT_FLOAT_EQ(t(0.4f), static_cast<float>(0.4 * 2.0 / (4.0 + 1e-6)));
  EXPECT_EQ(t(1.0f), 0.3f);
  EXPECT_EQ(t(-1.0f), -0.3f);
  // Both off: the identity, bit for bit.
  const GradTransform id = make_grad_transform(0.0, 0.0, 123.0);
  for (float x : {0.0f, -0.0f, 1e-30f, 3.14159f, -7e20f, 1e38f}) {
    const float y = id(x);
    EXPECT_EQ(std::memcmp(&x, &y, sizeof x), 0) << x;
  }
}

// SGLD with a zero gradient and no decay moves each weight by sqrt(lr T) N(0, 1): check the moments
// of the default (dtbench::Rng) noise over 200k elements. The standard error of the variance estimate
// is sqrt(2 / n) ~ 0.3%, of the mean 1 / sqrt(n) ~ 0.2% of sigma: 2% and 1% bounds are > 5 sigma.
TEST(Sgld, DefaultNoiseHasVarianceLrTimesTemperature) {
  const size_t n = 200000;
  ParamTable table({{"w", 0, n, TensorKind::conv_weight}});
  Sgld sgld(table, CommonOptions{}, SgldOptions{0.5}, 42);
  std::vector<float> w(n, 1.0f), g(n, 0.0f);
  const double lr = 0.02;
  sgld.step(w, g, lr);
  double mean = 0.0, sq = 0.0;
  for (float x : w) {
    mean += x - 1.0;
    sq += (x - 1.0) * (x - 1.0);
  }
  mean /= n;
  const double var = sq / n - mean * mean;
  EXPECT_NEAR(var, lr * 0.5, 0.02 * lr * 0.5);
  EXPECT_NEAR(mean, 0.0, 0.01 * std::sqrt(lr * 0.5));
}

// The default noise is a function of (seed, step, element) only: any split into ranges gives the same
// values, and different steps or seeds give different ones.
TEST(Sgld, RngNoiseDependsOnlyOnSeedStepAndElement) {
  RngNoise noise(5);
  std::vector<float> whole(5000), parts(5000);
  noise.fill(3, 0, whole.data(), whole.size());
  for (size_t at = 0; at < parts.size();) {
    const size_t len = std::min<size_t>(777, parts.size() - at);
    noise.fill(3, at, parts.data() + at, len);
    at += len;
  }
  EXPECT_EQ(whole, parts);
  std::vector<float> other_step(5000), other_seed(5000);
  noise.fill(4, 0, other_step.data(), other_step.size());
  RngNoise(6).fill(3, 0, other_seed.data(), other_seed.size());
  EXPECT_NE(whole, other_step);
  EXPECT_NE(whole, other_seed);
}

TEST(ParamTableTest, RejectsOverlapsAndDuplicates) {
  EXPECT_THROW(ParamTable({{"a", 0, 10, TensorKind::bias}, {"b", 5, 10, TensorKind::bias}}), std::invalid_argument);
  EXPECT_THROW(ParamTable({{"a", 0, 10, TensorKind::bias}, {"a", 10, 10, TensorKind::bias}}), std::invalid_argument);
  const ParamTable gap({{"a", 0, 10, TensorKind::bias}, {"b", 12, 3, TensorKind::bn}});
  EXPECT_EQ(gap.buffer_size(), 15u);
  EXPECT_EQ(gap.num_params(), 13u);
  const ParamTable other({{"a", 0, 10, TensorKind::bias}, {"b", 12, 3, TensorKind::conv_weight}});
  EXPECT_NE(gap.fingerprint(), other.fingerprint());
}

}  // namespace
}  // namespace dtbench::optim
