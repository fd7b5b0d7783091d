// --baseline against the committed reference records: the 1-rank fp32 run is the baseline of the 2-rank reference
// runs (bench/reference_runs.sh), although it was written before /model gained keys; another model is refused,
// naming the key (a run that is not done: train.bad_input).
#include <gtest/gtest.h>

#include <string>

#include "config/run_config.hpp"
#include "core/error.hpp"
#include "workloads/train/record_writer.hpp"

using namespace dtbench;

namespace {

const std::string kRoot = DTBENCH_SOURCE_DIR;
const std::string kBaseline = kRoot + "/results/reference/resnet20-fmnist-fp32.json";

Json two_rank_config() {
  return config::load(kRoot + "/results/reference/configs/resnet20-fmnist-k2-ring-sgd.json", {}, 2);
}

TEST(Baseline, TheCommittedReferenceRecordIsTheTwoRankRunsBaseline) {
  const Baseline b = read_baseline(kBaseline, two_rank_config());
  EXPECT_GT(b.images_per_second_per_rank, 0);
  const auto refusal = [](const Json& config) -> std::string {
    try {
      read_baseline(kBaseline, config);
    } catch (const BadInput& e) {
      return e.what();
    }
    return "accepted";
  };
  Json other = two_rank_config();
  other["model"]["arch"] = "resnet8";
  EXPECT_NE(refusal(other).find("another workload (its config differs at /model/arch)"), std::string::npos)
      << refusal(other);
  Json bf16 = two_rank_config();  // another precision is another throughput, not a scaling of this one
  bf16["precision"] = "bf16";
  EXPECT_NE(refusal(bf16).find("another workload (its config differs at /precision)"), std::string::npos)
      << refusal(bf16);
  Json elsewhere = two_rank_config();
  elsewhere["data"]["path"] = "/somewhere/else";  // where the files are is not the workload
  EXPECT_NO_THROW(read_baseline(kBaseline, elsewhere));
}

}  // namespace
