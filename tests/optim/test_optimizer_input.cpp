// Bad input to the optimizer and schedule factories: unknown names, negative or NaN hyperparameters,
// momentum of 1 or more, a warmup longer than the run. Each is a BadInput (exit code 2) whose message
// names the config key as a JSON pointer.
#include <gtest/gtest.h>

#include <limits>

#include "optim/adam.hpp"
#include "optim/optimizer.hpp"
#include "optim/scaling.hpp"
#include "optim/schedule.hpp"
#include "optim/sgd.hpp"

namespace dtbench::optim {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

ParamTable small_table() {
  return ParamTable({{"conv.weight", 0, 8, TensorKind::conv_weight}, {"bn.gamma", 8, 2, TensorKind::bn}});
}

// Expects BadInput with exit code 2 and a message containing every fragment.
template <class F>
void expect_bad_input(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "no BadInput; expected a message with '" << *fragments.begin() << "'";
  } catch (const BadInput& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    for (const std::string& s : fragments) {
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << "message: " << e.what() << "\nwanted: " << s;
    }
  }
}

void make(const Json& section) { make_optimizer(section, small_table()); }

TEST(OptimizerInput, UnknownName) {
  expect_bad_input([] { make({{"name", "adamm"}, {"lr", 0.1}}); }, {"/optimizer/name", "adamm", "lamb"});
  expect_bad_input([] { make({{"lr", 0.1}}); }, {"/optimizer/name"});
}

TEST(OptimizerInput, NegativeHyperparameters) {
  expect_bad_input([] { make({{"name", "sgd"}, {"lr", -0.1}}); }, {"/optimizer/lr"});
  expect_bad_input([] { make({{"name", "sgd"}, {"lr", 0.1}, {"weight_decay", -1e-4}}); }, {"/optimizer/weight_decay"});
  expect_bad_input([] { make({{"name", "adam"}, {"lr", 0.1}, {"eps", -1e-8}}); }, {"/optimizer/eps"});
  expect_bad_input([] { make({{"name", "adam"}, {"lr", 0.1}, {"clip_grad_norm", -1}}); }, {"/optimizer/clip_grad_norm"});
  expect_bad_input([] { make({{"name", "sgd"}, {"lr", 0.1}, {"clip_grad_value", -1}}); }, {"/optimizer/clip_grad_value"});
  expect_bad_input([] { make({{"name", "adagrad"}, {"lr", 0.1}, {"lr_decay", -1}}); }, {"/optimizer/lr_decay"});
  expect_bad_input([] { make({{"name", "ftrl"}, {"lr", 0.1}, {"l1", -1}}); }, {"/optimizer/l1"});
  expect_bad_input([] { make({{"name", "ftrl"}, {"lr", 0.1}, {"lr_power", 0.5}}); }, {"/optimizer/lr_power"});
  expect_bad_input([] { make({{"name", "sgld"}, {"lr", 0.1}, {"temperature", -1}}); }, {"/optimizer/temperature"});
  expect_bad_input([] { make({{"name", "dcasgd"}, {"lr", 0.1}, {"lambda", -0.04}}); }, {"/optimizer/lambda"});
  expect_bad_input([] { make({{"name", "lars"}, {"lr", 0.1}, {"eta", 0}}); }, {"/optimizer/eta"});
  expect_bad_input([] { make({{"name", "lamb"}, {"lr", 0.1}, {"trust_clip", -1}}); }, {"/optimizer/trust_clip"});
}

TEST(OptimizerInput, MomentumOfOneOrMore) {
  for (double m : {1.0, 1.5}) {
    expect_bad_input([m] { make({{"name", "sgd"}, {"lr", 0.1}, {"momentum", m}}); }, {"/optimizer/momentum", "[0, 1)"});
    expect_bad_input([m] { make({{"name", "lars"}, {"lr", 0.1}, {"momentum", m}}); }, {"/optimizer/momentum"});
    expect_bad_input([m] { make({{"name", "rmsprop"}, {"lr", 0.1}, {"momentum", m}}); }, {"/optimizer/momentum"});
    expect_bad_input([m] { make({{"name", "dcasgd"}, {"lr", 0.1}, {"momentum", m}}); }, {"/optimizer/momentum"});
    expect_bad_input([m] { make({{"name", "adam"}, {"lr", 0.1}, {"beta1", m}}); }, {"/optimizer/beta1"});
    expect_bad_input([m] { make({{"name", "lamb"}, {"lr", 0.1}, {"beta2", m}}); }, {"/optimizer/beta2"});
  }
  expect_bad_input([] { make({{"name", "sgd"}, {"lr", 0.1}, {"momentum", 0.0}, {"nesterov", true}}); },
                   {"/optimizer/nesterov"});
}

// NaN cannot be written in JSON, but the C++ option structs can carry it.
TEST(OptimizerInput, NaNHyperparameters) {
  expect_bad_input([] { Sgd(small_table(), CommonOptions{}, SgdOptions{kNaN}); }, {"/optimizer/momentum"});
  expect_bad_input([] { Sgd(small_table(), CommonOptions{kNaN}, SgdOptions{}); }, {"/optimizer/weight_decay"});
  expect_bad_input([] { Adam(small_table(), CommonOptions{}, AdamOptions{0.9, kNaN}); }, {"/optimizer/beta2"});
  expect_bad_input([] { Adam(small_table(), CommonOptions{}, AdamOptions{0.9, 0.999, kNaN}); }, {"/optimizer/eps"});
}

TEST(OptimizerInput, WrongTypesNameTheKey) {
  expect_bad_input([] { make({{"name", "sgd"}, {"lr", 0.1}, {"momentum", "high"}}); }, {"/optimizer/momentum"});
  expect_bad_input([] { make({{"name", "sgd"}, {"lr", 0.1}, {"nesterov", 1}}); }, {"/optimizer/nesterov"});
}

TEST(OptimizerInput, StepRejectsBadLearningRateAndSizes) {
  auto opt = make_optimizer({{"name", "sgd"}, {"lr", 0.1}}, small_table());
  std::vector<float> w(10, 1.0f), g(10, 0.1f), short_g(9, 0.1f);
  EXPECT_THROW(opt->step(w, g, kNaN), std::invalid_argument);
  EXPECT_THROW(opt->step(w, g, -0.1), std::invalid_argument);
  EXPECT_THROW(opt->step(w, short_g, 0.1), std::invalid_argument);
  EXPECT_EQ(opt->steps_taken(), 0);
}

// ---------------------------------------------------------------------------------------------------
// Schedules

const Json kSgd = {{"name", "sgd"}, {"lr", 0.1}};
const Json kNoScaling = {{"rule", "none"}, {"reference_batch", 256}};
const RunShape kRun{256, 10, 50};  // 5 epochs of 10 steps

void schedule(const Json& s, const Json& opt = kSgd, const Json& scaling = kNoScaling, RunShape run = kRun) {
  make_schedule(opt, scaling, s, run);
}

TEST(ScheduleInput, UnknownNamesAndUnits) {
  expect_bad_input([] { schedule({{"name", "cosin"}}); }, {"/schedule/name", "cosin", "inverse_sqrt"});
  expect_bad_input([] { schedule({{"name", "cosine"}, {"unit", "iteration"}}); }, {"/schedule/unit"});
  expect_bad_input([] { schedule({{"name", "plateau"}, {"mode", "best"}}); }, {"/schedule/mode"});
  expect_bad_input([] { schedule({{"name", "constant"}}, kSgd, {{"rule", "cubic"}}); }, {"/lr_scaling/rule", "cubic"});
}

TEST(ScheduleInput, WarmupLongerThanTheRun) {
  expect_bad_input([] { schedule({{"name", "cosine"}, {"warmup", {{"epochs", 10}}}}); },
                   {"/schedule/warmup/epochs: warmup of 10 epochs is longer than the run (5 epochs)"});
  expect_bad_input([] { schedule({{"name", "cosine"}, {"warmup", {{"steps", 51}}}}); },
                   {"/schedule/warmup/steps: warmup of 51 steps is longer than the run (50 steps)"});
  schedule({{"name", "cosine"}, {"warmup", {{"steps", 50}}}});  // exactly the run: allowed
  expect_bad_input([] { schedule({{"name", "cosine"}, {"warmup", {{"steps", 5}, {"epochs", 1}}}}); },
                   {"/schedule/warmup", "not both"});
  expect_bad_input([] { schedule({{"name", "constant"}, {"warmup", {{"epochs", -1}}}}); }, {"/schedule/warmup/epochs"});
  expect_bad_input([] { schedule({{"name", "constant"}, {"warmup", {{"start_factor", 1.5}}}}); },
                   {"/schedule/warmup/start_factor"});
  expect_bad_input([] { schedule({{"name", "constant"}, {"warmup", {{"epochs", 1}, {"from_reference_lr", true}}}}); },
                   {"/schedule/warmup/from_reference_lr"});
}

TEST(ScheduleInput, OutOfRangeValues) {
  expect_bad_input([] { schedule({{"name", "step"}, {"step_size", 0}}); }, {"/schedule/step_size"});
  expect_bad_input([] { schedule({{"name", "step"}, {"step_size", 3}, {"gamma", 0}}); }, {"/schedule/gamma"});
  expect_bad_input([] { schedule({{"name", "exponential"}, {"gamma", 1.5}}); }, {"/schedule/gamma"});
  expect_bad_input([] { schedule({{"name", "multistep"}, {"milestones", {3, 2}}}); }, {"/schedule/milestones/1"});
  expect_bad_input([] { schedule({{"name", "polynomial"}, {"power", -2}}); }, {"/schedule/power"});
  expect_bad_input([] { schedule({{"name", "polynomial"}, {"end_lr", 0.5}}); }, {"/schedule/end_lr", "peak"});
  expect_bad_input([] { schedule({{"name", "cosine"}, {"eta_min", -1}}); }, {"/schedule/eta_min"});
  expect_bad_input([] { schedule({{"name", "inverse_sqrt"}, {"beta", 0}}); }, {"/schedule/beta"});
  expect_bad_input([] { schedule({{"name", "plateau"}, {"factor", 1.0}}); }, {"/schedule/factor"});
  expect_bad_input([] { schedule({{"name", "plateau"}, {"patience", -1}}); }, {"/schedule/patience"});
  expect_bad_input([] { schedule({{"name", "constant"}}, {{"name", "sgd"}, {"lr", -1}}); }, {"/optimizer/lr"});
  expect_bad_input([] { schedule({{"name", "constant"}}, {{"name", "sgd"}}); }, {"/optimizer/lr", "missing"});
  expect_bad_input([] { schedule({{"name", "constant"}}, kSgd, {{"rule", "linear"}, {"reference_batch", 0}}); },
                   {"/lr_scaling/reference_batch"});
  // NaN through the C++ constructors.
  expect_bad_input([] { StepSchedule(0.1, TimeUnit::epoch, 10, Warmup{}, 3, kNaN); }, {"/schedule/gamma"});
  expect_bad_input([] { CosineSchedule(0.1, TimeUnit::epoch, 10, Warmup{}, 5, kNaN); }, {"/schedule/eta_min"});
  expect_bad_input([] { ConstantSchedule(kNaN, TimeUnit::epoch, 10, Warmup{}); }, {"/optimizer/lr"});
  expect_bad_input([] { ConstantSchedule(0.1, TimeUnit::epoch, 10, Warmup{5, kNaN}); },
                   {"/schedule/warmup/start_factor"});
}

}  // namespace
}  // namespace dtbench::optim
