// The run state's steady-state throughput: each attempt's first step (the first after the start and after every
// resume) is left out, the other steps' times are summed across resumes through the checkpoint header, and a
// checkpoint written before the field existed starts the sums at the resuming attempt. Exact values: the step
// times are sums of a few doubles, compared with the same sums.
#include <gtest/gtest.h>

#include "workloads/train/run_state.hpp"

using namespace dtbench;

namespace {
StepTiming step_of(double total) {
  StepTiming t;
  t.total = total;
  return t;
}
}  // namespace

TEST(RunState, SteadyThroughputLeavesOutEachAttemptsFirstStep) {
  TrainState st;
  EXPECT_FALSE(st.steady_images_per_second(64));
  st.add_step(step_of(5.0), 2.3);  // the first step: set-up
  EXPECT_EQ(st.images_per_second(64), 64 / 5.0);
  EXPECT_FALSE(st.steady_images_per_second(64)) << "one step: nothing steady yet";
  st.add_step(step_of(0.25), 2.2);
  st.add_step(step_of(0.75), 2.1);
  EXPECT_EQ(st.images_per_second(64), 3 * 64 / (5.0 + 0.25 + 0.75));
  EXPECT_EQ(st.steady_images_per_second(64), 2 * 64 / (0.25 + 0.75));

  // A resume: the state comes back from the checkpoint header, and the new attempt's first step is set-up again.
  TrainState resumed = TrainState::from_json(Json::parse(st.to_json().dump()));
  EXPECT_EQ(resumed.steady_images_per_second(64), st.steady_images_per_second(64));
  resumed.add_step(step_of(4.0), 2.0);
  resumed.add_step(step_of(0.5), 1.9);
  EXPECT_EQ(resumed.timed_steps, 5);
  EXPECT_EQ(resumed.steady_steps, 3);
  EXPECT_EQ(resumed.images_per_second(64), 5 * 64 / (5.0 + 0.25 + 0.75 + 4.0 + 0.5));
  EXPECT_EQ(resumed.steady_images_per_second(64), 3 * 64 / (0.25 + 0.75 + 0.5));
}

TEST(RunState, ACheckpointFromBeforeTheSteadySumsStartsThemAtTheResume) {
  TrainState st;
  st.add_step(step_of(5.0), 2.3);
  st.add_step(step_of(0.25), 2.2);
  Json header = Json::parse(st.to_json().dump());
  header.erase("steady");
  TrainState resumed = TrainState::from_json(header);
  EXPECT_EQ(resumed.steady_steps, 0);
  EXPECT_FALSE(resumed.steady_images_per_second(64));
  resumed.add_step(step_of(3.0), 2.1);
  resumed.add_step(step_of(0.5), 2.0);
  EXPECT_EQ(resumed.steady_images_per_second(64), 64 / 0.5);
  EXPECT_EQ(resumed.images_per_second(64), 4 * 64 / (5.0 + 0.25 + 3.0 + 0.5));
}
