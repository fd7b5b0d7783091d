// The reproduction harness's own logic: the critical-batch fit against exact S(B) curves, the claim files'
// validation (every error names the file and JSON pointer), and every committed claim under results/claims.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/run_record.hpp"
#include "reproduce/claim.hpp"
#include "slurm/campaign.hpp"
#include "reproduce/criteria/kinds.hpp"

namespace fs = std::filesystem;
using namespace dtbench;
using namespace dtbench::reproduce;

namespace {

// S(B) = S_min (1 + B_crit / B) exactly: the fit must return both parameters to rounding (1e-9 relative: a 2x2
// linear solve in double precision).
TEST(CriticalBatchFit, RecoversExactCurve) {
  for (double b_crit : {50.0, 200.0, 1000.0}) {
    std::vector<double> batch = {16, 64, 256, 1024, 4096}, steps;
    for (double b : batch) steps.push_back(300.0 * (1 + b_crit / b));
    double s_min = 0, bc = 0;
    ASSERT_TRUE(fit_critical_batch(batch, steps, s_min, bc));
    EXPECT_NEAR(s_min, 300.0, 300.0 * 1e-9);
    EXPECT_NEAR(bc, b_crit, b_crit * 1e-9);
  }
}

// Multiplicative noise of +-5% alternating in sign: the relative-error fit stays within 10% of the truth.
TEST(CriticalBatchFit, NoisyCurveStaysClose) {
  std::vector<double> batch = {16, 32, 64, 128, 256, 512, 1024, 2048}, steps;
  for (size_t i = 0; i < batch.size(); ++i) steps.push_back(500.0 * (1 + 256 / batch[i]) * (i % 2 ? 1.05 : 0.95));
  double s_min = 0, bc = 0;
  ASSERT_TRUE(fit_critical_batch(batch, steps, s_min, bc));
  EXPECT_NEAR(s_min, 500.0, 50.0);
  EXPECT_NEAR(bc, 256.0, 25.6);
}

// B_crit >= 0 is a constraint of the fit: steps that grow with the batch, or stay flat, are fitted on its bound,
// B_crit = 0 and S_min the least-squares constant on relative error, sum(1/S) / sum(1/S^2) (for 100, 400, 1600:
// 0.013125 / 1.06640625e-4 = 123.0769...), to rounding (1e-9). A flat curve was "no fit" (its free B_crit came out
// -3e-11) and claim d said contradicted where the curve shows no further gain (found by a hunt). Fewer than two
// batch sizes, and no S_min > 0, are still no fit.
TEST(CriticalBatchFit, FitsGrowingAndFlatCurvesOnTheBound) {
  double s_min = 0, bc = 0;
  ASSERT_TRUE(fit_critical_batch({16, 64, 256}, {100, 400, 1600}, s_min, bc));
  EXPECT_EQ(bc, 0.0);
  EXPECT_NEAR(s_min, 0.013125 / 1.06640625e-4, 1e-9 * s_min);
  ASSERT_TRUE(fit_critical_batch({64, 128, 256, 512}, {500, 500, 500, 500}, s_min, bc));
  EXPECT_NEAR(s_min, 500.0, 500.0 * 1e-9);
  EXPECT_NEAR(bc, 0.0, 1e-9);
  EXPECT_FALSE(fit_critical_batch({16}, {100}, s_min, bc));
  // A target met before any step (S = 0): no fit (it divided by zero), the claim inconclusive (found by a hunt).
  EXPECT_FALSE(fit_critical_batch({16, 64, 256}, {0, 400, 1600}, s_min, bc));
}

// A criterion's experiment: the sweep spec `doc` written to DIR/spec.json and its campaign laid out, fresh, under
// DIR/out/NAME, where `reproduce` keeps an experiment's runs; the test writes the runs' records itself.
struct TestSweep {
  Experiment experiment;
  slurm::Layout layout;
  std::vector<slurm::Point> points;
};

TestSweep write_test_sweep(const fs::path& dir, const std::string& name, const Json& doc) {
  fs::create_directories(dir);
  fs::remove_all(dir / "out");
  std::ofstream(dir / "spec.json") << doc.dump();
  TestSweep t;
  t.experiment.name = name, t.experiment.kind = "sweep", t.experiment.spec = dir / "spec.json";
  const slurm::Spec spec = slurm::load_spec(t.experiment.spec);
  t.layout = slurm::make_layout(dir / "out" / name, {"dtbench", "train"}, "test");
  t.points = slurm::expand(spec, t.layout.runs);
  slurm::write_campaign(spec, t.points, t.layout, false);
  return t;
}

// Claim d on steps that fall a little faster than 1/B (1000, 120, 29, 7 at B = 32, 256, 1024, 4096): the free fit's
// S_min is below 0, and the criterion said contradicted, where its limit S_min -> 0 fits (RMS 0.04) and puts every
// batch in perfect scaling: one regime of three, inconclusive as the criterion's text says (found by a hunt). The
// same grid with a real saturation (1000, 130, 60, 50) fits and is judged as before.
TEST(CriticalBatchCriterion, APerfectScalingLimitIsInconclusive) {
  const fs::path dir = fs::temp_directory_path() / ("dtbench-critical-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const Json doc = {{"name", "d"},
                    {"base", {{"duration", {{"steps", 5000}}}, {"eval", {{"target_accuracy", 0.5}}}}},
                    {"axes", {{"batch.global", {32, 256, 1024, 4096}}}},
                    {"repeats", 3}};
  const auto verdict = [&](const std::vector<int64_t>& steps, std::string& reason) {
    const auto [e, l, points] = write_test_sweep(dir, "sweep", doc);
    for (size_t i = 0; i < points.size(); ++i)
      for (const slurm::Run& run : points[i].runs) {
        RunRecord r;
        r.name = run.name, r.config = run.config, r.ranks = 1;
        r.global_batch = r.per_rank_batch = run.config["batch"]["global"].get<int64_t>();
        r.status = RunStatus::reached_target, r.steps = steps[i], r.samples = steps[i] * r.global_batch;
        r.target_accuracy = 0.5;
        r.curve.push_back({0.1, steps[i], r.samples, 1.0, 0.5, 0.5, 0.6, 0.1, std::nullopt, std::nullopt, std::nullopt});
        r.time_to_accuracy = TimeToAccuracy{1.0, steps[i], 0.1, r.samples};
        write_json_atomic(slurm::record_path(l, run), r.to_json(), false);
      }
    const Json criterion = {{"min_seeds", 3}, {"max_fit_rms", 0.25}};
    const Finding f = kCriticalBatch.evaluate(Claim{}, criterion, {e}, dir / "out");
    reason = f.reason;
    return f.verdict;
  };
  std::string reason;
  EXPECT_EQ(verdict({1000, 120, 29, 7}, reason), Verdict::inconclusive) << reason;
  EXPECT_NE(reason.find("the fit's limit S_min -> 0"), std::string::npos) << reason;
  EXPECT_NE(verdict({1000, 130, 60, 50}, reason), Verdict::inconclusive) << reason;
  fs::remove_all(dir);
}

// Claim e's table and reason print a K's sync and async figures with the decimals that tell them apart: a verdict
// that rests on spreads of 1.4976 and 1.5 showed both as "1.50" (found by a hunt). Here sync's epochs at the four
// learning rates are 1, 1.5, 1.5, 2 (best 1, spread 1.5) and async's 1.2 x (1, 1.4976, 1.4976, 2) (best 1.2, spread
// 1.4976); every point reaches the target, so the shares are equal and async is not harder to tune: contradicted.
TEST(AsyncCostCriterion, FiguresThatDecideAreShownApart) {
  const fs::path dir = fs::temp_directory_path() / ("dtbench-async-cost-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const Json doc = {{"name", "e"},
                    {"base", {{"duration", {{"epochs", 4}}}, {"eval", {{"target_accuracy", 0.84}}}}},
                    {"axes", {{"optimizer.lr", {0.01, 0.02, 0.05, 0.1}}}},
                    {"zip", {{{"parallel.mode", {"sync", "async"}},
                              {"reducer.name", {"ring", "async_parameter_server"}}}}},
                    {"slurm", {{"tasks_per_node", 2}}},
                    {"repeats", 1}};
  const auto [e, l, points] = write_test_sweep(dir, "mlp", doc);
  const std::map<double, double> relative = {{0.01, 1.0}, {0.02, 1.5}, {0.05, 1.5}, {0.1, 2.0}};
  for (const slurm::Point& p : points)
    for (const slurm::Run& run : p.runs) {
      const bool async = run.config["parallel"]["mode"] == "async";
      double epochs = relative.at(run.config["optimizer"]["lr"].get<double>());
      if (async) epochs = 1.2 * (epochs == 1.5 ? 1.4976 : epochs);
      RunRecord r;
      r.name = run.name, r.config = run.config, r.ranks = 2;
      r.global_batch = 128, r.per_rank_batch = 64;
      r.status = RunStatus::reached_target, r.steps = int64_t(epochs * 100), r.samples = r.steps * 128;
      r.target_accuracy = 0.84;
      r.curve.push_back({epochs, r.steps, r.samples, 1.0, 0.5, 0.84, 0.9, 0.1, std::nullopt, std::nullopt,
                         std::nullopt});
      r.time_to_accuracy = TimeToAccuracy{1.0, r.steps, epochs, r.samples};
      if (async) r.extra["async"] = {{"staleness_mean", 1.0}};
      write_json_atomic(slurm::record_path(l, run), r.to_json(), false);
    }
  const Json criterion = {{"group_key", "parallel.mode"}, {"sync", "sync"}, {"async", "async"}};
  const Finding f = kAsyncCost.evaluate(Claim{}, criterion, {e}, dir / "out");
  EXPECT_EQ(f.verdict, Verdict::contradicted) << f.reason;
  EXPECT_NE(f.reason.find("K=2: async is not harder to tune (share 4/4 against 4/4, spread 1.498 against 1.500)"),
            std::string::npos)
      << f.reason;
  EXPECT_NE(f.numbers.find("| 2 | async | 1.20 | 4/4 | 1.498 | 1.00 |"), std::string::npos) << f.numbers;
  EXPECT_NE(f.numbers.find("| 2 | sync | 1.00 | 4/4 | 1.500 | - |"), std::string::npos) << f.numbers;
  fs::remove_all(dir);
}

// An accuracy exactly at a criterion's bound is on the bound's side: 0.5006 - 0.01 is 0.49060000000000004 in binary,
// and a batch at 0.4906 counted as lost where claim b's text says "at most 0.01 below" is kept (found by a hunt). The
// 1e-9 tolerance is far below one image of a test set (1e-4 for 10,000 images).
TEST(CriterionBound, AnAccuracyAtTheBoundIsOnItsSide) {
  EXPECT_FALSE(0.4906 >= 0.5006 - 0.01);  // the rounding the helper absorbs
  EXPECT_TRUE(at_least(0.4906, 0.5006 - 0.01));
  EXPECT_TRUE(at_least(0.9, 0.9));
  EXPECT_FALSE(at_least(0.4905, 0.5006 - 0.01));  // one image of 10,000 below
  // A relative error exactly at "within 10%" is within it: 600 steps of 0.033 min against 0.3 min is
  // 0.10000000000000009 off in binary, and claim h judged that row outside (found by a hunt).
  const double err = (600 * 0.033 / 60 - 0.3) / 0.3;  // as published_table.cpp computes it
  EXPECT_GT(std::fabs(err), 0.1);  // the rounding the helper absorbs
  EXPECT_TRUE(within(err, 0.1));
  EXPECT_TRUE(within(-0.1, 0.1));
  EXPECT_FALSE(within(0.1001, 0.1));
}

// Claim a's bound: the tolerance without a control or while the control is below it, else control_factor times
// the control (exact: a max and a product). A sweep with a control whose run for this seed is missing or diverged,
// or whose bound reaches the weights' size, leaves the comparison unjudged: never a pass. With the 200-step MLP's
// measured control (2.38e-2, claim a's setup) the bound is 0.095: the K-rank runs (at most 2x the control) pass,
// and a learning rate 5% off (0.33 measured) does not.
TEST(EquivalenceBound, ToleranceOrScaledControl) {
  EXPECT_EQ(equivalence_bound(1e-4, 4, false, std::nullopt), 1e-4);
  EXPECT_EQ(equivalence_bound(1e-4, 4, true, 1e-6), 1e-4);
  EXPECT_EQ(equivalence_bound(1e-4, 4, true, 0.03), 4 * 0.03);
  EXPECT_EQ(equivalence_bound(0, 1, true, 0.0), 0.0);
  EXPECT_FALSE(equivalence_bound(1e-4, 4, true, std::nullopt));
  EXPECT_FALSE(equivalence_bound(1e-4, 4, true, INFINITY));
  EXPECT_FALSE(equivalence_bound(1e-4, 4, true, NAN));
  EXPECT_FALSE(equivalence_bound(1e-4, 4, true, 0.25));
  const auto bound = equivalence_bound(1e-4, 4, true, 2.38e-2);
  ASSERT_TRUE(bound);
  EXPECT_LE(2 * 2.38e-2, *bound);
  EXPECT_GT(0.33, *bound);
}

class ClaimFile : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / ("dtbench-claim-test-" + std::to_string(::getpid())) / "x";
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir.parent_path()); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; }
  std::string claim(const std::string& criterion, const std::string& experiments) {
    return R"({"id": "x", "title": "t", "seed": {"file": "f", "quote": "q"}, "setup": "s", "criterion": )" +
           criterion + R"(, "experiments": )" + experiments + "}";
  }
  std::string error() {
    try {
      load_claim(dir);
    } catch (const BadInput& e) {
      return e.what();
    }
    return "no error";
  }
};

const char* kCriterion = R"({"kind": "equivalence", "text": "t", "tolerance": 1e-4, "control_factor": 4})";
const char* kAllreduce = R"({"quick": [{"name": "g", "allreduce": {"ranks": [2, 3], "transport": "thread", "args": []}}], "full": []})";

TEST_F(ClaimFile, LoadsAValidClaim) {
  write("claim.json", claim(kCriterion, kAllreduce));
  Claim c = load_claim(dir);
  EXPECT_EQ(c.id, "x");
  ASSERT_EQ(c.scales["quick"].size(), 1u);
  EXPECT_EQ(c.scales["quick"][0].ranks, (std::vector<int>{2, 3}));
  EXPECT_TRUE(c.scales["full"].empty());
}

// An allreduce experiment whose buffers this machine could not hold is refused before a run, but a report
// regenerated from its records (which runs nothing, maybe on a smaller machine) loads it.
TEST_F(ClaimFile, TheMachinesMemoryIsCheckedOnlyForARun) {
  write("claim.json", claim(kCriterion, R"({"quick": [{"name": "g", "allreduce": {"ranks": [2], "transport": "thread",
                                          "args": ["-b", "4", "-e", "1024G", "--reducer", "ring"]}}], "full": []})"));
  EXPECT_NE(error().find("/experiments/quick/0/allreduce/args: -e/--maxbytes: 1024G would need "), std::string::npos)
      << error();
  EXPECT_EQ(load_claim(dir, /*to_run=*/false).scales["quick"].size(), 1u);
}

TEST_F(ClaimFile, ErrorsNameFileAndPointer) {
  write("claim.json", claim(R"({"kind": "equivalence", "text": "t", "tolerance": 2, "control_factor": 4})", kAllreduce));
  EXPECT_NE(error().find("claim.json: /criterion/tolerance: expected a number in [0, 1], got 2"), std::string::npos)
      << error();
  write("claim.json", claim(R"({"kind": "equivalence", "text": "t", "tolerance": 1e-4, "control_factor": 0.5})", kAllreduce));
  EXPECT_NE(error().find("claim.json: /criterion/control_factor: expected a number in [1, 1000], got 0.5"),
            std::string::npos) << error();
  write("claim.json", claim(R"({"kind": "equivalence", "text": "t", "tolerance": 1e-4})", kAllreduce));
  EXPECT_NE(error().find("/criterion/control_factor"), std::string::npos) << error();
  write("claim.json", claim(R"({"kind": "batch_scaling", "text": "t", "reference_batch": 128.5, "max_drop": 0.01,
                                "group_key": "schedule.warmup.epochs", "with_warmup": "2.0"})", kAllreduce));
  EXPECT_NE(error().find("/criterion/reference_batch: expected an integer in [1, 1073741824], got 128.5"),
            std::string::npos) << error();
  write("claim.json", claim(R"({"kind": "batch_scaling", "text": "t", "reference_batch": 128, "max_drop": 0.01,
                                "group_key": 7, "with_warmup": "2.0"})", kAllreduce));
  EXPECT_NE(error().find("/criterion/group_key: expected a non-empty text, got 7"), std::string::npos) << error();
  write("claim.json", claim(R"({"kind": "equivalance", "text": "t"})", kAllreduce));
  EXPECT_NE(error().find("/criterion/kind: unknown criterion kind \"equivalance\" (kinds: equivalence"),
            std::string::npos) << error();
  write("claim.json", claim(R"({"kind": "equivalence", "text": "t", "tolerance": 1e-4, "control_factor": 4, "tol": 1})", kAllreduce));
  EXPECT_NE(error().find("/criterion/tol: unexpected key"), std::string::npos) << error();
  write("claim.json", claim(kCriterion, R"({"quick": [{"name": "../up", "sweep": "s.json"}], "full": []})"));
  EXPECT_NE(error().find("/experiments/quick/0/name: expected a name"), std::string::npos) << error();
  write("claim.json", claim(kCriterion, R"({"quick": [{"name": "s", "sweep": "missing.json"}], "full": []})"));
  EXPECT_NE(error().find("missing.json"), std::string::npos) << error();
  write("claim.json", claim(kCriterion, R"({"quick": [{"name": "g", "allreduce": {"ranks": [0], "transport": "thread", "args": []}}], "full": []})"));
  EXPECT_NE(error().find("/experiments/quick/0/allreduce/ranks: expected rank counts in [1, 64], got 0"),
            std::string::npos) << error();
  write("claim.json", claim(kCriterion, R"({"quick": [{"name": "g", "allreduce": {"ranks": [2], "transport": "thread", "args": ["--json"]}}], "full": []})"));
  EXPECT_NE(error().find("--json is set by dtbench reproduce"), std::string::npos) << error();
  // Found by a hunt: "--json=x" slipped past, and options allreduce does not take failed only at run time.
  write("claim.json", claim(kCriterion, R"({"quick": [{"name": "g", "allreduce": {"ranks": [2], "transport": "thread", "args": ["--json=x"]}}], "full": []})"));
  EXPECT_NE(error().find("--json is set by dtbench reproduce"), std::string::npos) << error();
  write("claim.json", claim(kCriterion, R"({"quick": [{"name": "g", "allreduce": {"ranks": [2], "transport": "thread", "args": ["--bogus"]}}], "full": []})"));
  EXPECT_NE(error().find("/experiments/quick/0/allreduce/args: not arguments of dtbench allreduce:"), std::string::npos)
      << error();
  // What a criterion names among the experiments exists when the claim is loaded (it was "not run" in the report).
  const char* kPublished = R"({"quick": [{"name": "inputs", "published": ["networks.json", "compute.json"]}], "full": []})";
  write("claim.json", claim(R"({"kind": "time_to_train", "text": "t", "runs": ["goyal2017"], "max_error": 0.3,
                                "inputs": "nope", "sensitivity": []})", kPublished));
  EXPECT_NE(error().find("claim.json: /criterion/inputs: \"nope\" is no published experiment of this claim (there are: "
                         "inputs)"), std::string::npos) << error();
  write("claim.json", claim(R"({"kind": "time_to_train", "text": "t", "runs": ["goyal2017", "nope"], "max_error": 0.3,
                                "inputs": "inputs", "sensitivity": []})", kPublished));
  EXPECT_NE(error().find("claim.json: /criterion/runs/1: no published run \"nope\""), std::string::npos) << error();
  write("claim.json", claim(R"({"kind": "time_to_train", "text": "t", "runs": ["goyal2017"], "max_error": 0.3,
                                "inputs": "inputs", "sensitivity": []})",
                            R"({"quick": [{"name": "inputs", "published": ["networks.json"]}], "full": []})"));
  EXPECT_NE(error().find("claim.json: /criterion/inputs: experiment \"inputs\" does not copy compute.json"),
            std::string::npos) << error();
  write("claim.json", claim(R"({"kind": "published_table", "text": "t", "table": "nope", "max_inconsistency": 0.1,
                                "inputs": "inputs"})", kPublished));
  EXPECT_NE(error().find("claim.json: /criterion/table: experiment \"inputs\" does not copy nope.json"),
            std::string::npos) << error();
  // The top-level fields' errors name the file too.
  write("claim.json", R"({"id": "x", "title": 5})");
  EXPECT_NE(error().find("claim.json: /title: expected a string, got 5"), std::string::npos) << error();
  write("claim.json", R"({"id": "x", "title": "t", "seed": {"file": "f", "quote": "q"}, "setup": "s"})");
  EXPECT_NE(error().find("claim.json: /criterion: missing"), std::string::npos) << error();
  write("claim.json", claim(kCriterion, R"({"quick": [], "full": []})").replace(1, 9, R"("id": "y")"));
  EXPECT_NE(error().find("/id: \"y\" differs from the folder's name \"x\""), std::string::npos) << error();
}

// Found by a hunt: criterion parameters naming a device, model, network, experiment or group that does not exist,
// and allreduce arguments whose values the run refuses, passed the load (and --dry-run) and failed only in the
// report or the run, after the runs and reproduce.json. Each is refused when the claim loads, naming the pointer.
TEST_F(ClaimFile, WhatACriterionNamesExistsBeforeAnyRun) {
  const char* kF = R"({"quick": [{"name": "inputs", "published": ["networks.json", "compute.json"]},
                                  {"name": "this-machine", "allreduce": {"ranks": [2], "transport": "thread", "args": []}}],
                       "full": []})";
  auto hiding = [&](const std::string& change) {
    Json c = {{"kind", "comm_hiding"}, {"text", "t"}, {"global_batch", 1024}, {"model", "resnet50"},
              {"device", "p100-resnet50-fp32-tf"}, {"reducer", "ring"}, {"networks", {"10gbe-tcp", "ib-edr"}},
              {"hidden", 64}, {"exposed", 1}, {"inputs", "inputs"}, {"fitted", "this-machine"}};
    c.merge_patch(Json::parse(change));
    write("claim.json", claim(c.dump(), kF));
    return error();
  };
  EXPECT_EQ(hiding("{}"), "no error");
  EXPECT_NE(hiding(R"({"device": "nodevice"})").find("claim.json: /criterion/device: "), std::string::npos) << error();
  EXPECT_NE(hiding(R"({"model": "vgg"})").find("claim.json: /criterion/model: no model \"vgg\""), std::string::npos)
      << error();
  EXPECT_NE(hiding(R"({"networks": ["10gbe-tcp", "nonet"]})").find("claim.json: /criterion/networks/1: "),
            std::string::npos) << error();
  EXPECT_NE(hiding(R"({"reducer": "bogus"})").find("claim.json: /criterion/reducer: "), std::string::npos) << error();
  EXPECT_NE(hiding(R"({"hidden": 3})").find("claim.json: /criterion/hidden: a per-node batch is a power of two"),
            std::string::npos) << error();
  EXPECT_NE(hiding(R"({"global_batch": 1000})").find("claim.json: /criterion/global_batch: a power of two"),
            std::string::npos) << error();
  EXPECT_NE(hiding(R"({"fitted": "nope"})").find("claim.json: /criterion/fitted: \"nope\" is no allreduce experiment"),
            std::string::npos) << error();
  // Claim g's sweep, and an allreduce argument whose value does not parse (it failed in every run).
  write("claim.json", claim(R"({"kind": "traffic", "text": "t", "size_bytes": 1024, "sweep": "nope"})", kAllreduce));
  EXPECT_NE(error().find("claim.json: /criterion/sweep: \"nope\" is no allreduce experiment of this claim (there are: g)"),
            std::string::npos) << error();
  write("claim.json", claim(kCriterion, R"({"quick": [{"name": "g", "allreduce": {"ranks": [2], "transport": "thread", "args": ["-b", "1Z"]}}], "full": []})"));
  EXPECT_NE(error().find("claim.json: /experiments/quick/0/allreduce/args: -b/--minbytes: '1Z' is not a byte size"),
            std::string::npos) << error();
  // Groups (claims b, c, e): a value of group_key that no run of the sweeps takes.
  write("s.json", R"({"name": "s", "base": {"model": {"arch": "mlp"}, "duration": {"steps": 2},
                      "data": {"dataset": "synthetic"}}, "axes": {"optimizer.name": ["sgd", "lars"]}})");
  const char* kSweep = R"({"quick": [{"name": "s", "sweep": "s.json"}], "full": []})";
  write("claim.json", claim(R"({"kind": "usable_batch", "text": "t", "target_accuracy": 0.8, "group_key": "optimizer.name",
                                "baseline": "sgd"})", kSweep));
  EXPECT_EQ(error(), "no error");
  write("claim.json", claim(R"({"kind": "usable_batch", "text": "t", "target_accuracy": 0.8, "group_key": "optimizer.name",
                                "baseline": "nope"})", kSweep));
  EXPECT_NE(error().find("claim.json: /criterion/baseline: no run of this claim's sweeps is in group \"nope\" of "
                         "/group_key \"optimizer.name\" (their groups: \"lars\", \"sgd\")"),
            std::string::npos) << error();
  // A key the records give has no groups before the runs: not refused (it was, whatever the value).
  write("claim.json", claim(R"({"kind": "usable_batch", "text": "t", "target_accuracy": 0.8,
                                "group_key": "optimizer.name,global_batch", "baseline": "sgd 64"})", kSweep));
  EXPECT_EQ(error(), "no error");
  write("claim.json", claim(R"({"kind": "async_cost", "text": "t", "group_key": "parallel.mode,optimizer.name",
                                "sync": "sync sgd", "async": "async sgd"})", kSweep));
  EXPECT_NE(error().find("claim.json: /criterion/async: no run of this claim's sweeps is in group \"async sgd\""),
            std::string::npos) << error();
}

// Every committed claim loads: its criterion's parameters and every sweep spec it names are valid.
TEST(CommittedClaims, AllLoad) {
  const fs::path root = fs::path(DTBENCH_SOURCE_DIR) / "results" / "claims";
  const auto ids = claim_ids(root);
  EXPECT_GE(ids.size(), 5u);
  for (const auto& id : ids) {
    SCOPED_TRACE(id);
    Claim c = load_claim(root / id);
    EXPECT_FALSE(c.scales["quick"].empty());
    EXPECT_FALSE(c.scales["full"].empty());
  }
}

}  // namespace
