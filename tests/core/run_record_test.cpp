// A filled run record serialises with every field the schema requires; record_matches_schema (CTest)
// then validates the file written here with python3-jsonschema.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/atomic_file.hpp"
#include "config/run_config.hpp"
#include "core/run_record.hpp"

using namespace dtbench;

TEST(RunRecord, WritesSchemaValidRecord) {
  RunRecord r;
  r.name = "resnet20-sgd-ring-k2";
  r.config = config::defaults();
  r.ranks = 2;
  r.global_batch = 128;
  r.per_rank_batch = 64;
  r.status = RunStatus::reached_target;
  r.started_utc = r.finished_utc = utc_timestamp();
  r.wall_seconds = 12.5;
  r.steps = 100;
  r.epochs = 0.21;
  r.samples = 12800;
  r.timing = {0.001, 0.02, 0.04, 0.002, 0.01, 0.001, 0.064};
  r.images_per_second = 2000;
  r.bytes_communicated_per_step = 1.1e6;
  r.curve.push_back({0.21, 100, 12800, 12.4, 0.5, 0.45, 0.91, 0.1, 512.0});
  r.target_accuracy = 0.9;
  r.time_to_accuracy = TimeToAccuracy{12.4, 100, 0.21, 12800};
  Json j = r.to_json();
  EXPECT_EQ(j["status"], "reached-target");
  EXPECT_EQ(j["seed"], 1);
  EXPECT_EQ(j["time_to_accuracy"]["reached"], true);
  EXPECT_EQ(j["curve"][0]["b_simple"], 512.0);
  EXPECT_TRUE(j["provenance"].contains("onednn"));
  auto path = std::filesystem::path(DTBENCH_TEST_OUT) / "sample-record.json";
  std::filesystem::remove(path);
  write_json_atomic(path, j, true);
  EXPECT_TRUE(std::filesystem::exists(path));
}

TEST(RunRecord, StatusNames) {
  EXPECT_EQ(to_string(RunStatus::completed), "completed");
  EXPECT_EQ(to_string(RunStatus::diverged), "diverged");
  EXPECT_EQ(to_string(RunStatus::failed), "failed");
  EXPECT_EQ(to_string(RunStatus::preempted), "preempted");
}
