// Population-based training: the spec's rules (exit 2 naming the key), the priors, the explore step, truncation
// selection, and the lineage file (round trip and ancestry).
#include <gtest/gtest.h>

#include <functional>

#include <cmath>
#include <filesystem>
#include <set>

#include "core/error.hpp"
#include "core/pbt_lineage.hpp"
#include "core/rng.hpp"
#include "pbt/population.hpp"
#include "pbt/spec.hpp"

namespace dtbench::test {
namespace {

Json good_spec() {
  return Json::parse(R"({
    "name": "t", "population": 8, "ready_steps": 10,
    "base": {"model": {"arch": "mlp"}, "duration": {"steps": 40}, "schedule": {"name": "constant"}},
    "hyperparameters": {"optimizer.lr": {"prior": "log_uniform", "min": 0.001, "max": 1},
                        "optimizer.momentum": {"prior": "uniform", "min": 0, "max": 0.99},
                        "schedule.warmup.steps": {"prior": "uniform", "min": 0, "max": 20}}})");
}

std::string error_of(const Json& doc) {
  try {
    pbt::parse_spec(doc, ".");
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

TEST(PbtSpec, ParsesAndDerives) {
  const pbt::Spec s = pbt::parse_spec(good_spec(), ".");
  EXPECT_EQ(s.population, 8);
  EXPECT_EQ(s.total_steps, 40);
  EXPECT_EQ(s.intervals(), 4);
  EXPECT_EQ(s.cut(), 2);  // round(0.25 x 8)
  ASSERT_EQ(s.hyperparameters.size(), 3u);
  EXPECT_FALSE(s.hyperparameters[0].integer);
  EXPECT_TRUE(s.hyperparameters[2].integer);  // schedule.warmup.steps is an integer key
  // The schema, not the base's JSON, says which keys are integers: momentum, lr and weight decay written as whole
  // numbers in the base stay real-valued priors (they were rounded to 0 or 1).
  Json whole = good_spec();
  whole["base"]["optimizer"] = {{"name", "sgd"}, {"lr", 1}, {"momentum", 0}, {"weight_decay", 0}};
  whole["hyperparameters"]["optimizer.weight_decay"] = {{"prior", "uniform"}, {"min", 0}, {"max", 0.01}};
  for (const pbt::Prior& p : pbt::parse_spec(whole, ".").hyperparameters)
    EXPECT_EQ(p.integer, p.key == "schedule.warmup.steps") << p.key;
  Json odd = good_spec();
  odd["ready_steps"] = 15;
  EXPECT_EQ(pbt::parse_spec(odd, ".").intervals(), 3);  // 15, 30, 40
  EXPECT_EQ(s.ranks, 1);
  EXPECT_EQ(s.concurrency, 1);
  EXPECT_EQ(s.local["mpirun_args"], Json::array({"--oversubscribe"}));
  EXPECT_EQ(s.slurm["launcher"], "srun");  // the sweeps' defaults
  Json wide = good_spec();
  wide["slurm"] = {{"nodes", 2}, {"tasks_per_node", 3}, {"time", "00:10:00"}};
  wide["local"] = {{"concurrency", 2}, {"mpirun_args", {"--bind-to", "none"}}};
  wide["base"]["batch"] = {{"global", 96}};
  const pbt::Spec w = pbt::parse_spec(wide, ".");
  EXPECT_EQ(w.ranks, 6);
  EXPECT_EQ(w.concurrency, 2);
  EXPECT_EQ(w.local["mpirun_args"], Json::array({"--bind-to", "none"}));
  EXPECT_EQ(w.slurm["time"], "00:10:00");
  EXPECT_EQ(w.slurm["signal_seconds"], 120);
  EXPECT_EQ(s.select_on, "test");  // the base holds no validation set out
  Json held = good_spec();
  held["base"]["data"] = {{"validation_size", 1000}};
  EXPECT_EQ(pbt::parse_spec(held, ".").select_on, "validation");
  held["select_on"] = "test";
  EXPECT_EQ(pbt::parse_spec(held, ".").select_on, "test");
}

// Members draw their streams from their own seeds (base seed + member), but train and are ranked on one data set:
// synthetic data was drawn from each member's seed, so a member that continued another's checkpoint trained on
// other images (a hunt). Its data seed is the base's unless the base gives one.
TEST(PbtSpec, MembersShareTheSyntheticDataSet) {
  Json doc = good_spec();
  doc["base"]["data"] = {{"dataset", "synthetic"}};
  const pbt::Spec s = pbt::parse_spec(doc, ".");
  const Json a = pbt::member_config(s, Json::object(), 0, "m00-i000", "/runs");
  const Json b = pbt::member_config(s, Json::object(), 3, "m03-i000", "/runs");
  EXPECT_NE(a["seed"], b["seed"]);
  EXPECT_EQ(a["data"]["synthetic"]["seed"], s.base_seed);
  EXPECT_EQ(b["data"]["synthetic"]["seed"], s.base_seed);
  doc["base"]["data"]["synthetic"] = {{"seed", 42}};
  EXPECT_EQ(pbt::member_config(pbt::parse_spec(doc, "."), Json::object(), 3, "m03-i000", "/runs")["data"]["synthetic"]["seed"], 42);
}

TEST(PbtSpec, BadSpecsNameTheKey) {
  Json j = good_spec();
  j["population"] = 1;
  EXPECT_EQ(error_of(j), "/population: a population of 1 has no member to copy from; give at least 2 members");
  j = good_spec();
  j["ready_steps"] = 41;
  EXPECT_EQ(error_of(j), "/ready_steps: 41 is longer than the run, 40 steps (/base/duration/steps): no member would "
                         "ever be ready");
  j = good_spec();
  j["base"]["duration"] = {{"epochs", 2}};
  EXPECT_EQ(error_of(j).rfind("/base/duration/steps: give each member's length in steps", 0), 0u);
  j = good_spec();
  j["hyperparameters"]["optimizer.momentum"]["max"] = 1.5;
  EXPECT_EQ(error_of(j).rfind("/hyperparameters/optimizer.momentum/max: not a value of optimizer.momentum in the base "
                              "config: /optimizer/momentum: expected",
                              0),
            0u)
      << error_of(j);
  j = good_spec();
  j["hyperparameters"]["batch.global"] = {{"prior", "uniform"}, {"min", 64}, {"max", 256}};
  EXPECT_EQ(error_of(j).rfind("/hyperparameters/batch.global: only the optimizer's hyperparameters", 0), 0u);
  j = good_spec();
  j["hyperparameters"]["optimizer.momentum"]["prior"] = "log_uniform";  // momentum 0 is a value, but not a log's
  EXPECT_EQ(error_of(j), "/hyperparameters/optimizer.momentum/min: a log-uniform prior needs min > 0, got 0");
  j = good_spec();
  j["hyperparameters"]["optimizer.lr"]["min"] = 0;  // checked as a value of the key first
  EXPECT_EQ(error_of(j), "/hyperparameters/optimizer.lr/min: not a value of optimizer.lr in the base config: "
                         "/optimizer/lr: expected a number > 0, got 0");
  j = good_spec();
  j["hyperparameters"]["optimizer.lr"]["prior"] = "normal";
  EXPECT_EQ(error_of(j), "/hyperparameters/optimizer.lr/prior: expected one of \"uniform\", \"log_uniform\", got \"normal\"");
  j = good_spec();
  j["exploit"] = {{"truncation", 0.75}};
  EXPECT_EQ(error_of(j).rfind("/exploit/truncation: expected a number in", 0), 0u);
  j = good_spec();
  j["explore"] = {{"perturb", {0.8, -1}}};
  EXPECT_EQ(error_of(j), "/explore/perturb/1: expected a factor > 0, got -1");
  j = good_spec();
  j["base"]["name"] = "x";
  EXPECT_EQ(error_of(j).rfind("/base/name: set by dtbench pbt", 0), 0u);
  j = good_spec();
  j["base"]["parallel"] = {{"mode", "async"}};
  j["base"]["reducer"] = {{"name", "async_parameter_server"}};
  EXPECT_EQ(error_of(j).rfind("/base/parallel/mode: asynchronous SGD keeps no checkpoint", 0), 0u);
  j = good_spec();
  j["populaton"] = 4;
  EXPECT_EQ(error_of(j).rfind("/populaton: unknown key", 0), 0u) << error_of(j);
  j = good_spec();
  j["select_on"] = "validation";
  EXPECT_EQ(error_of(j).rfind("/select_on: selecting on the validation set needs one: give /base/data/validation_size", 0),
            0u) << error_of(j);
  j["select_on"] = "train";
  EXPECT_EQ(error_of(j).rfind("/select_on: expected one of", 0), 0u) << error_of(j);
  // The members' ranks and launch.
  j = good_spec();
  j["slurm"] = {{"tasks_per_node", 3}};
  j["base"]["batch"] = {{"global", 128}};
  EXPECT_EQ(error_of(j), "/base: /batch/global: 128 is not divisible by the rank count 3") << error_of(j);
  j = good_spec();
  j["slurm"] = {{"nodes", 0}};
  EXPECT_EQ(error_of(j).rfind("/slurm/nodes: expected", 0), 0u) << error_of(j);
  j = good_spec();
  j["slurm"] = {{"array", true}};
  EXPECT_EQ(error_of(j).rfind("/slurm/array: members are submitted one job each", 0), 0u) << error_of(j);
  j = good_spec();
  j["slurm"] = {{"nodes", 1000}, {"tasks_per_node", 1000}};
  EXPECT_EQ(error_of(j).rfind("/slurm/tasks_per_node: a member of 1000000 ranks (nodes x tasks_per_node) is more than "
                              "65536", 0), 0u) << error_of(j);
  j["slurm"] = {{"nodes", 100000}, {"tasks_per_node", 100000}};  // beyond an int: the Slurm section's own check
  EXPECT_EQ(error_of(j).rfind("/slurm/tasks_per_node: 10000000000 ranks (nodes x tasks_per_node): MPI counts ranks in "
                              "an int", 0), 0u) << error_of(j);
  j = good_spec();
  j["local"] = {{"concurency", 2}};
  EXPECT_EQ(error_of(j).rfind("/local/concurency: unknown key", 0), 0u) << error_of(j);
  j = good_spec();
  j["local"] = {{"concurrency", 0}};
  EXPECT_EQ(error_of(j), "/local/concurrency: expected an integer from 1 to 1024, got 0");
  j = good_spec();
  j["local"] = {{"mpirun_args", {""}}};
  EXPECT_EQ(error_of(j).rfind("/local/mpirun_args/0: ", 0), 0u) << error_of(j);
  j = good_spec();
  j.erase("hyperparameters");
  EXPECT_EQ(error_of(j).rfind("/hyperparameters: expected an object of key: prior", 0), 0u);
}

TEST(Pbt, SamplesLieInTheirPriors) {
  const pbt::Spec s = pbt::parse_spec(good_spec(), ".");
  double log_sum = 0;
  const int n = 4000;
  for (int m = 0; m < n; ++m) {
    Rng rng = pbt::stream(s, -1, m);
    const Json h = pbt::sample(s, rng);
    const double lr = h["optimizer.lr"].get<double>();
    EXPECT_GE(lr, 0.001);
    EXPECT_LE(lr, 1.0);
    EXPECT_GE(h["optimizer.momentum"].get<double>(), 0.0);
    EXPECT_LE(h["optimizer.momentum"].get<double>(), 0.99);
    EXPECT_TRUE(h["schedule.warmup.steps"].is_number_integer());
    log_sum += std::log10(lr);
  }
  // Log-uniform on [1e-3, 1]: log10 is uniform on [-3, 0], mean -1.5, standard deviation 3/sqrt(12) = 0.866; the
  // mean of 4000 draws is within 4 standard errors (0.055) of it.
  EXPECT_NEAR(log_sum / n, -1.5, 4 * 0.866 / std::sqrt(double(n)));
}

TEST(Pbt, ExplorePerturbsByTheFactorsOrResamples) {
  pbt::Spec s = pbt::parse_spec(good_spec(), ".");
  const Json source = {{"optimizer.lr", 0.1}, {"optimizer.momentum", 0.5}, {"schedule.warmup.steps", 10}};
  std::set<double> lr_factors;
  for (int m = 0; m < 200; ++m) {
    Rng rng = pbt::stream(s, 3, m);
    const Json h = pbt::explore(s, source, rng);
    const double f = h["optimizer.lr"].get<double>() / 0.1;
    EXPECT_TRUE(std::abs(f - 0.8) < 1e-12 || std::abs(f - 1.2) < 1e-12) << f;
    lr_factors.insert(std::round(f * 10) / 10);
    const int64_t w = h["schedule.warmup.steps"].get<int64_t>();
    EXPECT_TRUE(w == 8 || w == 12) << w;  // 10 x 0.8, 10 x 1.2, rounded
  }
  EXPECT_EQ(lr_factors.size(), 2u);  // both factors drawn
  // Clamped to the prior: momentum 0.9 x 1.2 = 1.08 becomes 0.99.
  for (int m = 0; m < 50; ++m) {
    Rng rng = pbt::stream(s, 4, m);
    const Json h = pbt::explore(s, {{"optimizer.lr", 0.1}, {"optimizer.momentum", 0.9}, {"schedule.warmup.steps", 10}}, rng);
    const double mom = h["optimizer.momentum"].get<double>();
    EXPECT_TRUE(std::abs(mom - 0.72) < 1e-12 || mom == 0.99) << mom;
  }
  // Resample probability 1: every value is a fresh draw from the prior, not a multiple of the source's.
  s.resample_probability = 1.0;
  int multiples = 0;
  for (int m = 0; m < 100; ++m) {
    Rng rng = pbt::stream(s, 5, m);
    const double f = pbt::explore(s, source, rng)["optimizer.lr"].get<double>() / 0.1;
    multiples += std::abs(f - 0.8) < 1e-9 || std::abs(f - 1.2) < 1e-9;
  }
  EXPECT_EQ(multiples, 0);
}

TEST(Pbt, TruncationSelection) {
  const pbt::Spec s = pbt::parse_spec(good_spec(), ".");  // 8 members, cut 2
  const std::vector<double> scores = {0.5, 0.9, 0.1, 0.7, 0.8, 0.2, 0.6, 0.3};
  // Best: 1 (0.9), 4 (0.8); worst: 2 (0.1), 5 (0.2).
  for (int trial = 0; trial < 50; ++trial) {
    Rng rng = pbt::stream(s, trial, 8);
    const std::vector<int> src = pbt::select(s, scores, rng);
    for (int m : {0, 1, 3, 4, 6, 7}) EXPECT_EQ(src[size_t(m)], m);
    for (int m : {2, 5}) EXPECT_TRUE(src[size_t(m)] == 1 || src[size_t(m)] == 4) << src[size_t(m)];
  }
  // A failed member (NaN; member 3 scored 0.7) is replaced besides the bottom cut of the members that ran (2 and
  // 5), by a top member that ran.
  std::vector<double> with_failure = scores;
  with_failure[3] = std::nan("");
  Rng rng = pbt::stream(s, 0, 8);
  std::vector<int> src = pbt::select(s, with_failure, rng);
  for (int m : {2, 3, 5}) EXPECT_TRUE(src[size_t(m)] == 1 || src[size_t(m)] == 4) << m;
  for (int m : {0, 1, 4, 6, 7}) EXPECT_EQ(src[size_t(m)], m);
  // Random search replaces only the failed member.
  pbt::Spec random = s;
  random.mode = "random_search";
  src = pbt::select(random, with_failure, rng);
  for (int m = 0; m < 8; ++m) {
    if (m != 3) {
      EXPECT_EQ(src[size_t(m)], m);
    }
  }
  EXPECT_TRUE(src[3] == 1 || src[3] == 4);
  EXPECT_THROW(pbt::select(s, std::vector<double>(8, std::nan("")), rng), RunFailed);
  // A diverged member (-inf) is replaced besides the bottom cut (2 and 5); random search leaves it, diverged.
  std::vector<double> with_divergence = scores;
  with_divergence[6] = -HUGE_VAL;
  src = pbt::select(s, with_divergence, rng);
  for (int m : {0, 1, 3, 4, 7}) EXPECT_EQ(src[size_t(m)], m);
  for (int m : {2, 5, 6}) EXPECT_TRUE(src[size_t(m)] == 1 || src[size_t(m)] == 4) << m;
  src = pbt::select(random, with_divergence, rng);
  for (int m = 0; m < 8; ++m) EXPECT_EQ(src[size_t(m)], m);
  EXPECT_THROW(pbt::select(s, std::vector<double>(8, -HUGE_VAL), rng), RunFailed);
  // Five failed, three alive (0.9, 0.5, 0.1) with a cut of 2: one top (member 1) and one bottom (member 2), apart;
  // the middle one (member 0) is kept. (The cuts overlapped: member 0 was replaced by itself or by member 1.)
  const double nan = std::nan("");
  const std::vector<double> three = {0.5, 0.9, 0.1, nan, nan, nan, nan, nan};
  for (int trial = 0; trial < 20; ++trial) {
    Rng r3 = pbt::stream(s, trial, 8);
    src = pbt::select(s, three, r3);
    EXPECT_EQ(src[0], 0);
    EXPECT_EQ(src[1], 1);
    for (int m : {2, 3, 4, 5, 6, 7}) EXPECT_EQ(src[size_t(m)], 1) << m;
  }
  // Two alive with a cut of 2: the better is kept and is the source of the worse (the cuts were both members: the
  // better one replaced half the time, the worse one by itself half the time).
  for (int trial = 0; trial < 20; ++trial) {
    Rng r2 = pbt::stream(s, trial, 9);
    src = pbt::select(s, {0.2, 0.6, nan, nan, nan, nan, nan, nan}, r2);
    for (int m = 0; m < 8; ++m) EXPECT_EQ(src[size_t(m)], 1) << trial << " " << m;
  }
  // One alive: it is the source of every failed member and is kept.
  src = pbt::select(s, {nan, 0.4, nan, nan, nan, nan, nan, nan}, rng);
  for (int m = 0; m < 8; ++m) EXPECT_EQ(src[size_t(m)], 1) << m;
}

TEST(PbtLineage, RoundTripAndAncestry) {
  pbt::Lineage l;
  l.name = "t", l.mode = "pbt", l.population = 2, l.ready_steps = 10, l.total_steps = 30, l.seed = 3;
  l.spec = good_spec();
  l.spec["hyperparameters"] = {{"optimizer.lr", {{"prior", "log_uniform"}, {"min", 0.001}, {"max", 3}}}};
  for (int64_t i = 0; i < 3; ++i) {
    pbt::Interval iv;
    iv.index = i, iv.start_step = 10 * i, iv.end_step = 10 * i + 10;
    for (int m = 0; m < 2; ++m) {
      pbt::MemberInterval mi;
      mi.member = m;
      mi.run = pbt::run_name(m, i);
      mi.hyperparameters = {{"optimizer.lr", 0.1 * (m + 1) + double(i)}};
      mi.status = "completed";
      mi.test_accuracy = 0.5 + 0.1 * m + 0.01 * double(i);
      if (i > 0) mi.init_from = pbt::run_name(m, i - 1);
      iv.members.push_back(mi);
    }
    l.intervals.push_back(iv);
  }
  // At the end of interval 0 member 0 took member 1's checkpoint.
  l.intervals[0].events.push_back({"exploit", 0, 1, {{"optimizer.lr", 0.1}}, {{"optimizer.lr", 0.24}}, 0});
  l.intervals[1].members[0].init_from = "m01-i000";
  l.intervals[2].members[0].status = "failed";
  l.intervals[2].members[0].test_accuracy.reset();
  l.intervals[2].members[0].exit_code = 1;
  const pbt::Lineage back = pbt::Lineage::from_json(l.to_json(), "x");
  EXPECT_EQ(back.to_json(), l.to_json());
  EXPECT_EQ(back.best_member(), 1);
  EXPECT_EQ(l.to_json()["best"]["run"], "m01-i002");
  const std::vector<pbt::MemberInterval> chain = back.ancestry(0);
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0].run, "m01-i000");  // member 0's weights descend from member 1's first interval
  EXPECT_EQ(chain[1].run, "m00-i001");
  EXPECT_EQ(chain[2].run, "m00-i002");
  Json bad = l.to_json();
  bad["intervals"][1]["members"].erase(1);
  try {
    pbt::Lineage::from_json(bad, "f:");
    ADD_FAILURE();
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), "f:/intervals/1/members: expected an array of 2 members");
  }
  // A lineage edited by hand: each damage is refused naming its pointer (found by an adversarial hunt: a duplicated
  // interval was reported as the finished campaign, a run name sent --init-from out of the folder).
  const auto error_of_lineage = [&](const std::function<void(Json&)>& edit) -> std::string {
    Json j = l.to_json();
    edit(j);
    try {
      pbt::Lineage::from_json(j, "f:");
    } catch (const BadInput& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of_lineage([](Json& j) { j["intervals"][2] = j["intervals"][0]; }),
            "f:/intervals/2: expected interval 2 from step 20 to 30 (ready_steps 10, total_steps 30), got interval 0 "
            "from 0 to 10");
  EXPECT_EQ(error_of_lineage([](Json& j) { j["intervals"][0]["end_step"] = 999; }),
            "f:/intervals/0: expected interval 0 from step 0 to 10 (ready_steps 10, total_steps 30), got interval 0 "
            "from 0 to 999");
  EXPECT_EQ(error_of_lineage([](Json& j) { j["intervals"][1]["members"][0]["run"] = "../../etc/x"; }),
            "f:/intervals/1/members/0/run: expected \"m00-i001\", got \"../../etc/x\"");
  EXPECT_EQ(error_of_lineage([](Json& j) { j["intervals"][1]["members"][0]["init_from"] = "m05-i000"; }),
            "f:/intervals/1/members/0/init_from: \"m05-i000\" is no run of the interval before");
  // A run name of the interval before that its member did not train there (no run): the lineage's ancestry found it
  // only when asked, with neither the file nor the pointer in its message.
  EXPECT_EQ(error_of_lineage([](Json& j) {
              j["intervals"][1]["members"][0]["init_from"] = "m01-i000";
              j["intervals"][0]["members"][1]["run"] = "";
            }),
            "f:/intervals/1/members/0/init_from: \"m01-i000\" is no run of the interval before");
  EXPECT_EQ(error_of_lineage([](Json& j) { j["intervals"][0]["members"][1]["hyperparameters"]["optimizer.lr"] = "x"; }),
            "f:/intervals/0/members/1/hyperparameters/optimizer.lr: expected a number, got \"x\"");
  EXPECT_EQ(error_of_lineage([](Json& j) { j["intervals"][0]["members"][1]["hyperparameters"] = Json::object(); }),
            "f:/intervals/0/members/1/hyperparameters: expected an object of hyperparameters");
  EXPECT_EQ(error_of_lineage([](Json& j) { j["intervals"][0]["members"][1]["status"] = "running"; }),
            "f:/intervals/0/members/1/status: expected completed, failed or diverged, got \"running\"");
  EXPECT_EQ(error_of_lineage([](Json& j) { j["intervals"][0]["members"][1]["test_accuracy"] = 1.5; }),
            "f:/intervals/0/members/1/test_accuracy: expected a number in [0, 1]");
  // Each member holds every hyperparameter of the spec, within its prior (a missing one was an internal error, an
  // out-of-range one a member that failed); integers are integers of their type (2^40 members read as 0).
  EXPECT_EQ(error_of_lineage([](Json& j) { j["intervals"][0]["members"][1]["hyperparameters"] = {{"x", 1}}; }),
            "f:/intervals/0/members/1/hyperparameters/x: not a hyperparameter of the spec");
  EXPECT_EQ(error_of_lineage([](Json& j) {
              j["spec"]["hyperparameters"]["optimizer.momentum"] = {{"prior", "uniform"}, {"min", 0}, {"max", 0.9}};
            }),
            "f:/intervals/0/members/0/hyperparameters/optimizer.momentum: missing (a hyperparameter of the spec)");
  EXPECT_EQ(error_of_lineage([](Json& j) { j["intervals"][0]["events"][0]["hyperparameters_after"]["optimizer.lr"] = 5; }),
            "f:/intervals/0/events/0/hyperparameters_after/optimizer.lr: 5 is outside the spec's prior, [0.001, 3]");
  EXPECT_EQ(error_of_lineage([](Json& j) { j["population"] = int64_t{1} << 40; }),
            "f:/population: expected an integer from 2 to 100000, got 1099511627776");
  EXPECT_EQ(error_of_lineage([](Json& j) { j["intervals"][0]["events"][0]["member"] = (int64_t{1} << 32) + 1; }),
            "f:/intervals/0/events/0/member: expected an integer, got 4294967297");
}

}  // namespace
}  // namespace dtbench::test
