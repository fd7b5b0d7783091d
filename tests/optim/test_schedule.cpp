// Learning-rate schedules against the committed references (optim/reference/schedules.json): PyTorch
// 1.13 schedulers (StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, PolynomialLR, LinearLR,
// ReduceLROnPlateau) driving an optimizer per iteration or per epoch, and the documented formulas for
// what torch lacks (polynomial decay to end_lr, inverse square root, warmup from 0 and from the
// reference LR, the sqrt scaling rule). Each case is built through make_schedule from its config
// sections, so the factory, the scaling rules and the warmup composition are checked too.
//
// Tolerance: 1e-12 relative. PyTorch computes most schedules recursively (lr *= ratio each step), so
// its values carry one rounding per step of the run (at most ~100 here, ~1e-14 relative); ours are
// closed forms in double. A wrong boundary (off-by-one epoch, a milestone applied late) changes the LR
// by a factor, not by 1e-12.
#include <gtest/gtest.h>

#include <bit>
#include <limits>

#include <cmath>

#include "core/error.hpp"

#include "optim/scaling.hpp"
#include "optim/schedule.hpp"
#include "reference_data.hpp"

namespace dtbench::optim {
namespace {

const Json& schedule_cases() {
  static const Json cases = testing::read_json("schedules.json")["cases"];
  return cases;
}

class ScheduleReference : public ::testing::TestWithParam<std::string> {};

TEST_P(ScheduleReference, MatchesReference) {
  const Json* found = nullptr;
  for (const Json& c : schedule_cases()) {
    if (c["case"] == GetParam()) found = &c;
  }
  ASSERT_NE(found, nullptr);
  const Json& kase = *found;
  const RunShape run{kase["run"]["global_batch"].get<int64_t>(), kase["run"]["steps_per_epoch"].get<int64_t>(),
                     kase["run"]["total_steps"].get<int64_t>()};
  auto s = make_schedule(kase["optimizer"], kase["lr_scaling"], kase["schedule"], run);
  const std::vector<double> expected = kase["lr"].get<std::vector<double>>();
  ASSERT_EQ(static_cast<int64_t>(expected.size()), run.total_steps);
  for (int64_t step = 0; step < run.total_steps; ++step) {
    const double want = expected[static_cast<size_t>(step)];
    ASSERT_NEAR(s->lr(step), want, 1e-12 * std::abs(want) + 1e-300)
        << GetParam() << " (" << kase["source"].get<std::string>() << ") at step " << step;
    // Plateau: the evaluation after each epoch.
    if (!kase["metrics"].is_null() && (step + 1) % run.steps_per_epoch == 0) {
      s->observe(kase["metrics"][static_cast<size_t>(step / run.steps_per_epoch)].get<double>());
    }
  }
}

std::vector<std::string> schedule_case_names() {
  std::vector<std::string> names;
  for (const Json& c : schedule_cases()) names.push_back(c["case"].get<std::string>());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Reference, ScheduleReference, ::testing::ValuesIn(schedule_case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(ScheduleReference, EveryScheduleHasAReference) {
  for (const std::string& name : schedule_names()) {
    bool covered = false;
    for (const Json& c : schedule_cases()) covered = covered || c["schedule"]["name"] == name;
    EXPECT_TRUE(covered) << name;
  }
}

TEST(Scaling, LinearAndSqrtRules) {
  EXPECT_DOUBLE_EQ(scale_lr(0.1, ScalingRule::linear, 8192, 256), 3.2);  // Goyal et al.: 0.1 k n / 256
  EXPECT_DOUBLE_EQ(scale_lr(0.1, ScalingRule::sqrt, 1024, 256), 0.2);
  EXPECT_DOUBLE_EQ(scale_lr(0.1, ScalingRule::none, 1024, 256), 0.1);
  EXPECT_DOUBLE_EQ(scale_lr(0.1, ScalingRule::linear, 128, 256), 0.05);
  // Every batch of a sweep gets its LR from the one reference.
  const Json opt = {{"name", "sgd"}, {"lr", 0.1}};
  const Json linear = {{"rule", "linear"}, {"reference_batch", 256}};
  for (int64_t b : {64, 256, 1024, 4096}) {
    EXPECT_DOUBLE_EQ(peak_lr_from_config(opt, linear, b), 0.1 * static_cast<double>(b) / 256.0);
  }
}

TEST(ScheduleBehaviour, EpochUnitHoldsForAWholeEpochAndWarmupIsPerStep) {
  auto s = make_schedule({{"name", "sgd"}, {"lr", 1.0}}, Json(),
                         {{"name", "exponential"}, {"gamma", 0.5}, {"unit", "epoch"},
                          {"warmup", {{"steps", 4}, {"start_factor", 0.0}}}},
                         RunShape{256, 10, 30});
  EXPECT_EQ(s->time_of(9), 0);
  EXPECT_EQ(s->time_of(10), 1);
  EXPECT_DOUBLE_EQ(s->lr(0), 0.0);
  EXPECT_DOUBLE_EQ(s->lr(2), 0.5);   // halfway through warmup, epoch 0
  EXPECT_DOUBLE_EQ(s->lr(9), 1.0);   // warmup done, still epoch 0
  EXPECT_DOUBLE_EQ(s->lr(10), 0.5);  // epoch 1
  EXPECT_DOUBLE_EQ(s->lr(29), 0.25);
  EXPECT_THROW(s->lr(-1), std::invalid_argument);
}

TEST(ScheduleBehaviour, DefaultsFromTheConfigDocumentation) {
  // cosine t_max 0 = the run's length: the LR reaches eta_min at the end of the run (in steps).
  auto cos = make_schedule({{"name", "sgd"}, {"lr", 0.1}}, Json(), {{"name", "cosine"}, {"unit", "step"}},
                           RunShape{256, 10, 100});
  EXPECT_NEAR(cos->lr(50), 0.05, 1e-15);
  // multistep defaults [30, 60, 80], gamma 0.1
  auto ms = make_schedule({{"name", "sgd"}, {"lr", 0.1}}, Json(), {{"name", "multistep"}}, RunShape{256, 1, 90});
  EXPECT_DOUBLE_EQ(ms->lr(29), 0.1);
  EXPECT_NEAR(ms->lr(30), 0.01, 1e-17);
  EXPECT_NEAR(ms->lr(85), 1e-4, 1e-19);
  // adam's default LR when /optimizer/lr is absent
  auto adam = make_schedule({{"name", "adam"}}, Json(), {{"name", "constant"}}, RunShape{});
  EXPECT_DOUBLE_EQ(adam->lr(0), 0.001);
}

// An evaluation is observed through the result /schedule/metric names, in the direction "auto" gives it: each metric
// against the same schedule fed that result's value directly (patience 0: the second evaluation that does not
// improve on the first halves the rate). The other schedules ignore evaluations.
TEST(ScheduleBehaviour, PlateauWatchesTheResultItsMetricNames) {
  dtbench::EvalPoint better, worse;  // better for an accuracy (higher) and for a loss (lower) alike
  better.test_accuracy = 0.9, better.test_loss = 0.1, better.validation_accuracy = 0.8, better.validation_loss = 0.2;
  worse.test_accuracy = 0.5, worse.test_loss = 0.7, worse.validation_accuracy = 0.4, worse.validation_loss = 0.9;
  for (const char* metric : {"test_accuracy", "test_loss", "validation_accuracy", "validation_loss"}) {
    const Json sched = {{"name", "plateau"}, {"metric", metric}, {"patience", 0}, {"factor", 0.5}};
    auto s = make_schedule({{"name", "sgd"}, {"lr", 0.1}}, Json(), sched, RunShape{256, 1, 100});
    s->observe(better);
    EXPECT_DOUBLE_EQ(s->lr(10), 0.1) << metric;
    s->observe(better);  // no improvement: halved
    EXPECT_DOUBLE_EQ(s->lr(10), 0.05) << metric;
    dtbench::EvalPoint mixed = worse;  // only the watched result improves: no cut
    const std::string m = metric;
    if (m == "test_accuracy") mixed.test_accuracy = 0.95;
    if (m == "test_loss") mixed.test_loss = 0.05;
    if (m == "validation_accuracy") mixed.validation_accuracy = 0.85;
    if (m == "validation_loss") mixed.validation_loss = 0.15;
    s->observe(mixed);
    EXPECT_DOUBLE_EQ(s->lr(10), 0.05) << metric;
  }
  auto constant = make_schedule({{"name", "sgd"}, {"lr", 0.1}}, Json(), {{"name", "constant"}}, RunShape{256, 1, 100});
  for (int i = 0; i < 5; ++i) constant->observe(worse);
  EXPECT_DOUBLE_EQ(constant->lr(10), 0.1);
}

TEST(ScheduleBehaviour, PlateauStateRoundTripsExactly) {
  const Json sched = {{"name", "plateau"}, {"mode", "min"}, {"patience", 1}, {"factor", 0.5}, {"cooldown", 2}};
  auto a = make_schedule({{"name", "sgd"}, {"lr", 0.1}}, Json(), sched, RunShape{256, 1, 100});
  for (double m : {1.0, 0.9, 0.95, 0.95, 0.94}) a->observe(m);
  const Json state = a->save_state();
  auto b = make_schedule({{"name", "sgd"}, {"lr", 0.1}}, Json(), sched, RunShape{256, 1, 100});
  b->load_state(state);                      // in memory (signed counts)
  b->load_state(Json::parse(state.dump()));  // and through text, as a checkpoint would store it
  for (double m : {0.96, 0.97, 0.98, 0.99, 0.5, 0.6, 0.7}) {
    a->observe(m);
    b->observe(m);
    ASSERT_EQ(a->lr(10), b->lr(10));
  }
  EXPECT_LT(a->lr(10), 0.1);  // it did reduce
  EXPECT_THROW(b->load_state(Json::object()), BadInput);
  // A checkpoint's state that save_state could not have written is refused, not half taken.
  for (const char* key : {"bad_evaluations", "cooldown_left"}) {
    Json bad = state;
    bad[key] = -1;
    EXPECT_THROW(b->load_state(bad), BadInput) << key;
    bad[key] = 1.5;
    EXPECT_THROW(b->load_state(bad), BadInput) << key;
  }
  Json nan_lr = state;
  nan_lr["current_lr_bits"] = std::bit_cast<uint64_t>(std::numeric_limits<double>::quiet_NaN());
  EXPECT_THROW(b->load_state(nan_lr), BadInput);
  Json extra = state;
  extra["other"] = 1;
  EXPECT_THROW(b->load_state(extra), BadInput);
}

TEST(ScheduleBehaviour, AStatelessScheduleTakesOnlyItsEmptyState) {
  auto cos = make_schedule({{"name", "sgd"}, {"lr", 0.1}}, Json(), {{"name", "cosine"}, {"unit", "step"}},
                           RunShape{256, 1, 100});
  EXPECT_EQ(cos->save_state(), Json::object());
  EXPECT_NO_THROW(cos->load_state(Json::object()));
  for (const Json& bad : {Json(5), Json(), Json::array(), Json{{"current_lr_bits", 1}}})
    EXPECT_THROW(cos->load_state(bad), BadInput) << bad.dump();
}

}  // namespace
}  // namespace dtbench::optim
