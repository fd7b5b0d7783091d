// The run state's steady-state throughput: each attempt's first step (the first after the start and after every
// resume) is left out, the other steps' times are summed across resumes through the checkpoint header, and a
// checkpoint written before the field existed starts the sums at the resuming attempt. Exact values: the step
// times are sums of a few doubles, compared with the same sums.
#include <gtest/gtest.h>

#include "core/error.hpp"
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

  st.step = 3;  // one step for each timed one (the header's counts may not exceed it)
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
  st.step = 2;
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

// A header is text anyone can edit: what it holds goes into the record, so each field is checked, named by its
// pointer (a negative sum made a record `dtbench table` refused; 2^63 steps was reported as a negative number).
TEST(RunState, AnEditedHeaderIsRefusedNamingTheField) {
  TrainState st;
  st.add_step(step_of(0.5), 2.3);
  st.step = 1;
  const Json good = Json::parse(st.to_json().dump());
  const auto refused = [&](const std::string& pointer, const Json& value, const std::string& message) {
    Json bad = good;
    bad[Json::json_pointer(pointer)] = value;
    try {
      TrainState::from_json(bad);
      ADD_FAILURE() << pointer << " = " << value.dump() << " was taken";
    } catch (const BadInput& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  refused("/sum/total", -1e300, "/state/sum/total: expected a number in [0, 1e12]");
  refused("/steady/steps", -3, "/state/steady/steps: expected a whole number");
  refused("/step", uint64_t{1} << 63, "/state/step: expected a whole number in [0, 2^62], got 9223372036854775808");
  refused("/step", 4.5, "/state/step: expected a whole number");
  refused("/elapsed", "x", "/state/elapsed: expected a number");
  refused("/elapsed", 1e308, "/state/elapsed: expected a number in [0, 1e12]");
  refused("/tta", Json::object(), "/state/tta/seconds: missing");
  refused("/timed_steps", 5, "/state/timed_steps: 5 is more than /state/step (1)");
  refused("/mllog_bytes", -2, "/state/mllog_bytes: expected a whole number");
  // The end of MLPerf's timed run without a reached target (a hunt's 1 put run_stop before run_start).
  refused("/mllog_timed_run_end_ms", 1,
          "/state/mllog_timed_run_end_ms: 1, but /state/tta is null: the timed run ends only when the target is reached");
  // The preemptions and the noise scale's state, which go into the record (a hunt's signal "abc" at step -5).
  const Json preemption = {{"signal", 10}, {"at_step", 1}, {"utc", "2026-11-30T00:00:00Z"}};
  Json with = good;
  with["preemptions"] = Json::array({preemption, preemption});
  with["preemptions"][0]["resumed_utc"] = "2026-11-30T00:01:00Z";
  with["preemptions"][0]["threads_changed"] = {{"checkpointed", {1, 2}}, {"resumed", {2, 2}}};
  EXPECT_EQ(TrainState::from_json(with).preemptions, with["preemptions"]);
  refused("/preemptions", Json::array({{{"signal", "abc"}, {"at_step", 1}, {"utc", ""}}}),
          "/state/preemptions/0/signal: expected an integer");
  refused("/preemptions", Json::array({{{"signal", 99}, {"at_step", 1}, {"utc", ""}}}), "/state/preemptions/0/signal");
  refused("/preemptions", Json::array({{{"signal", 10}, {"at_step", -5}, {"utc", ""}}}),
          "/state/preemptions/0/at_step: expected a whole number");
  refused("/preemptions", Json::array({{{"signal", 10}, {"at_step", 2}, {"utc", ""}}}),
          "/state/preemptions/0/at_step: 2 is not in [0, 1]");
  refused("/preemptions", Json::array({{{"signal", 10}, {"at_step", 1}, {"utc", 5}}}), "/state/preemptions/0/utc");
  refused("/preemptions", Json::array({{{"signal", 10}, {"at_step", 1}, {"utc", ""}, {"x", 1}}}),
          "/state/preemptions/0/x");
  Json threads = Json::array({preemption});
  threads[0]["threads_changed"] = {{"checkpointed", {"a", -1}}, {"resumed", {1, 1}}};
  refused("/preemptions", threads, "/state/preemptions/0/threads_changed/checkpointed: expected [fewest, most]");
  // The nodes as Comm::nodes() numbers them, one per rank on both sides.
  Json nodes = Json::array({preemption});
  nodes[0]["nodes_changed"] = {{"checkpointed", {0, 0, 0}}, {"resumed", {0, 1, 1}}};
  Json on_nodes = good;
  on_nodes["preemptions"] = nodes;
  EXPECT_EQ(TrainState::from_json(on_nodes).preemptions, nodes);
  nodes[0]["nodes_changed"]["resumed"] = {1, 0, 0};
  refused("/preemptions", nodes, "/state/preemptions/0/nodes_changed/resumed: expected each rank's node, numbered from 0");
  nodes[0]["nodes_changed"]["resumed"] = {0, 1};
  refused("/preemptions", nodes, "/state/preemptions/0/nodes_changed/resumed: expected each rank's node, numbered from 0 "
                                 "in the order of their lowest ranks (3 ranks)");
  refused("/noise", {{"a", "b"}}, "/state/noise/a");
  refused("/noise", {{"g2", 1.0}, {"trace", "x"}, {"weight", 1.0}}, "/state/noise/trace: expected a number");
  refused("/noise", Json::array(), "/state/noise: expected an object");
  Json curve = good;
  curve["curve"] = Json::array({Json::object()});
  EXPECT_THROW(TrainState::from_json(curve), BadInput);
  try {
    TrainState::from_json(curve);
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("/state/curve/0"), std::string::npos) << e.what();
  }
}

// The curve and the time to accuracy go into the record as they are: an edited point ahead of the run (a record
// reached its target at step 100 of an 8-step run, in 1e9 s) or out of order, a time to accuracy at no evaluation,
// and an MLLOG length of 0 (the resumed run cut the whole first log) are refused, naming the field.
TEST(RunState, AnEditedCurveIsRefusedNamingThePoint) {
  TrainState st;
  st.step = 8;
  st.elapsed = 4.0;
  for (int i = 1; i <= 4; ++i) {
    EvalPoint p;
    p.step = 2 * i, p.samples = 16 * i, p.epoch = 0.25 * i, p.wall_seconds = 0.5 * i, p.test_accuracy = 0.2 * i;
    st.curve.push_back(p);
  }
  st.retarget(0.4);
  ASSERT_TRUE(st.tta);
  st.mllog_bytes = 1234;
  const Json good = Json::parse(st.to_json().dump());
  EXPECT_EQ(TrainState::from_json(good).curve, st.curve);
  const auto error = [&](const std::vector<std::pair<std::string, Json>>& edits) -> std::string {
    Json bad = good;
    for (const auto& [pointer, value] : edits) bad[Json::json_pointer(pointer)] = value;
    try {
      TrainState::from_json(bad);
    } catch (const BadInput& e) {
      return e.what();
    }
    return "taken";
  };
  EXPECT_EQ(error({{"/curve/1/step", 100}}), "checkpoint header: /state/curve/1/step: 100 is more than /state/step (8)");
  EXPECT_EQ(error({{"/curve/1", good["curve"][2]}, {"/curve/2", good["curve"][1]}}),
            "checkpoint header: /state/curve/2: an evaluation before the one at /state/curve/1 (its step, samples, "
            "epoch or wall_seconds is less)");
  EXPECT_EQ(error({{"/curve/3/wall_seconds", 0.1}}),
            "checkpoint header: /state/curve/3: an evaluation before the one at /state/curve/2 (its step, samples, "
            "epoch or wall_seconds is less)");
  EXPECT_EQ(error({{"/tta/seconds", 1e9}}),
            "checkpoint header: /state/tta: no point of /state/curve has its step, samples, epoch and seconds (a "
            "target is reached at an evaluation)");
  EXPECT_EQ(error({{"/mllog_bytes", 0}}),
            "checkpoint header: /state/mllog_bytes: 0, but a run's MLLOG file holds its first events before any "
            "checkpoint (a resumed run would cut them all)");
  // A point repeated at one step (equal, not before) is taken.
  EXPECT_EQ(error({{"/curve/3", good["curve"][2]}, {"/tta", nullptr}}), "taken");
}
