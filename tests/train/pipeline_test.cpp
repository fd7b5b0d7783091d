// The pipeline schedules (workloads/train/pipeline.hpp) as pure functions: every stage runs each micro-batch's
// forward and backward once; the backwards in micro-batch order (so GPipe and 1F1B sum gradients alike); 1F1B holds
// at most S - s micro-batches on stage s and GPipe all M, and a simulation of the S stages with unit-time forwards
// and backwards (a stage's F_j waits for the previous stage's F_j, its B_j for the next stage's B_j) ends at
// (M + S - 1)(f + b) with b = f, the GPipe paper's bubble (S - 1) / (M + S - 1): exact integers, no tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <vector>

#include "workloads/train/pipeline.hpp"

namespace dtbench::test {
namespace {

// Finishing times of every stage's operations when each takes one time unit and waits for its inputs; the last
// finishing time is the step's length.
int simulate(const std::string& schedule, int S, int M) {
  std::vector<std::vector<PipelineOp>> ops(static_cast<size_t>(S));
  for (int s = 0; s < S; ++s) ops[size_t(s)] = pipeline_schedule(schedule, S, s, M);
  std::map<std::tuple<int, bool, int>, int> done;  // (stage, forward, micro) -> finish time
  std::vector<size_t> next(static_cast<size_t>(S), 0);
  std::vector<int> clock(static_cast<size_t>(S), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < S; ++s) {
      if (next[size_t(s)] == ops[size_t(s)].size()) continue;
      const PipelineOp op = ops[size_t(s)][next[size_t(s)]];
      int ready = 0;
      if (op.forward && s > 0) {
        auto it = done.find({s - 1, true, op.micro});
        if (it == done.end()) continue;
        ready = it->second;
      }
      if (!op.forward && s < S - 1) {
        auto it = done.find({s + 1, false, op.micro});
        if (it == done.end()) continue;
        ready = it->second;
      }
      clock[size_t(s)] = std::max(clock[size_t(s)], ready) + 1;
      done[{s, op.forward, op.micro}] = clock[size_t(s)];
      ++next[size_t(s)];
      progress = true;
    }
  }
  for (int s = 0; s < S; ++s)
    EXPECT_EQ(next[size_t(s)], ops[size_t(s)].size()) << schedule << ": stage " << s << " deadlocked";
  return *std::max_element(clock.begin(), clock.end());
}

TEST(PipelineSchedule, EveryMicroBatchOnceBackwardsInOrderAndInFlightBounded) {
  for (const std::string sched : {"gpipe", "1f1b"})
    for (int S = 1; S <= 6; ++S)
      for (int M = 1; M <= 9; ++M)
        for (int s = 0; s < S; ++s) {
          const std::vector<PipelineOp> ops = pipeline_schedule(sched, S, s, M);
          ASSERT_EQ(ops.size(), size_t(2 * M));
          std::vector<int> forwards, backwards;
          int in_flight = 0, most = 0;
          for (const PipelineOp& op : ops) {
            if (op.forward) {
              forwards.push_back(op.micro);
              most = std::max(most, ++in_flight);
            } else {
              // Its forward came first.
              ASSERT_NE(std::find(forwards.begin(), forwards.end(), op.micro), forwards.end()) << sched;
              backwards.push_back(op.micro);
              --in_flight;
            }
          }
          for (int j = 0; j < M; ++j) {
            EXPECT_EQ(forwards[size_t(j)], j) << sched;
            EXPECT_EQ(backwards[size_t(j)], j) << sched << ": backwards out of micro-batch order";
          }
          EXPECT_EQ(most, pipeline_slots(sched, S, s, M)) << sched << " S=" << S << " s=" << s << " M=" << M;
          // Slot j % slots is free again when micro-batch j starts.
          const int slots = pipeline_slots(sched, S, s, M);
          std::vector<int> holder(size_t(slots), -1);
          for (const PipelineOp& op : ops) {
            int& h = holder[size_t(op.micro % slots)];
            if (op.forward) {
              EXPECT_EQ(h, -1) << sched << ": slot still holds micro-batch " << h;
              h = op.micro;
            } else {
              EXPECT_EQ(h, op.micro);
              h = -1;
            }
          }
        }
}

TEST(PipelineSchedule, StepLengthGivesGPipesBubble) {
  for (const std::string sched : {"gpipe", "1f1b"})
    for (int S = 1; S <= 6; ++S)
      for (int M = 1; M <= 9; ++M) {
        // Forward and backward each one unit: a step is 2 (M + S - 1) units, of which each stage computes 2 M.
        const int length = simulate(sched, S, M);
        EXPECT_EQ(length, 2 * (M + S - 1)) << sched << " S=" << S << " M=" << M;
        EXPECT_DOUBLE_EQ(1.0 - 2.0 * M / length, ideal_bubble_fraction(S, M));
      }
}

TEST(PipelineSchedule, StagesCutByCost) {
  // Costs 1, 1, 4, 1, 1 on 3 stages: the costliest unit alone, the rest split around it.
  const std::vector<double> c{1, 1, 4, 1, 1};
  EXPECT_EQ(stage_units(c, 3, 0), std::make_pair(0, 2));
  EXPECT_EQ(stage_units(c, 3, 1), std::make_pair(2, 3));
  EXPECT_EQ(stage_units(c, 3, 2), std::make_pair(3, 5));
  EXPECT_THROW(pipeline_schedule("zigzag", 2, 0, 2), std::logic_error);
}

}  // namespace
}  // namespace dtbench::test
