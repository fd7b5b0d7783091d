// A filled run record serialises with every field the schema requires; record_matches_schema (CTest)
// then validates the file written here with python3-jsonschema. The reader gives the record back
// exactly, names why a file is not a readable record, and decides which runs are done.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <tuple>

#include "core/atomic_file.hpp"
#include "core/provenance.hpp"
#include "config/run_config.hpp"
#include "core/run_record.hpp"

using namespace dtbench;
namespace fs = std::filesystem;

namespace {

// A record with every field set, the optional ones included.
RunRecord full_record() {
  RunRecord r;
  r.name = "resnet20-sgd-ring-k2";
  r.config = config::defaults();
  r.config["eval"]["target_accuracy"] = 0.9;  // the time to accuracy's target is the config's
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
  r.steady_images_per_second = 2150;
  r.bytes_communicated_per_step = 1.1e6;
  r.curve.push_back({0.21, 100, 12800, 12.4, 0.5, 0.45, 0.91, 0.1, 512.0, std::nullopt, std::nullopt});
  r.target_accuracy = 0.9;
  r.time_to_accuracy = TimeToAccuracy{12.4, 100, 0.21, 12800};
  return r;
}

std::string file_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

// A scratch folder for record files, removed at the end of the test.
struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("dtbench-record-" + std::to_string(::getpid()));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() { fs::remove_all(dir); }
  fs::path write(const std::string& name, const std::string& text) {
    write_file_atomic(dir / name, text, false);
    return dir / name;
  }
};

}  // namespace

TEST(RunRecord, WritesSchemaValidRecord) {
  RunRecord r = full_record();
  Json j = r.to_json();
  EXPECT_EQ(j["status"], "reached-target");
  EXPECT_EQ(j["seed"], 1);
  EXPECT_EQ(j["time_to_accuracy"]["reached"], true);
  EXPECT_EQ(j["curve"][0]["b_simple"], 512.0);
  EXPECT_EQ(j["throughput"]["steady_images_per_second"], 2150.0);
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

TEST(RunRecord, ReadsBackExactlyWhatWasWritten) {
  Scratch s;
  RunRecord r = full_record();
  r.status_detail = "target 0.9 reached at step 100";
  r.curve.push_back({0.42, 200, 25600, 24.8, 0.3, 0.35, 0.93, 0.05, std::nullopt, 0.38, 0.92});
  r.steps = 200, r.samples = 25600, r.epochs = 0.42;  // it trained on past its target, to its last evaluation
  r.extra["per_rank_timing"] = Json::array({Json::object({{"rank", 0}, {"total", 0.064}})});
  r.extra["scaling_efficiency"] = 0.93;
  fs::path file = s.dir / "full.json";
  write_json_atomic(file, r.to_json(), true);

  RecordFile read = read_run_record(file);
  ASSERT_TRUE(read.record) << read.problem;
  EXPECT_EQ(read.problem, "");
  // The file again, byte for byte: provenance and extra included.
  write_json_atomic(s.dir / "again.json", read.record->to_json(), true);
  EXPECT_EQ(file_text(s.dir / "again.json"), file_text(file));
  // The record again, field for field.
  r.provenance = read.record->provenance;
  EXPECT_EQ(*read.record, r);
  EXPECT_EQ(RunRecord::from_json(r.to_json()), r);
}

TEST(RunRecord, ReadsBackWhatIsLeftOut) {
  // No target reached, no noise scale, a loss that was not finite (a diverged run: null in the file), no step
  // after an attempt's first (no steady-state throughput: the field is left out, as records before it had).
  RunRecord r = full_record();
  r.status = RunStatus::diverged;
  r.time_to_accuracy.reset();
  r.steady_images_per_second.reset();
  r.curve[0].b_simple.reset();
  r.curve[0].train_loss = std::numeric_limits<double>::quiet_NaN();
  const Json j = Json::parse(r.to_json().dump());  // as a file holds it
  EXPECT_TRUE(j["curve"][0]["train_loss"].is_null());
  EXPECT_FALSE(j["throughput"].contains("steady_images_per_second"));
  RunRecord back = RunRecord::from_json(j);
  EXPECT_EQ(back.to_json().dump(), j.dump());
  EXPECT_TRUE(std::isnan(back.curve[0].train_loss));
  EXPECT_FALSE(back.time_to_accuracy);
  EXPECT_FALSE(back.curve[0].b_simple);
  EXPECT_FALSE(back.steady_images_per_second);
}

TEST(RunRecord, SaysWhyAFileIsNotAReadableRecord) {
  Scratch s;
  const Json good = full_record().to_json();
  auto problem = [&](const std::string& name, const std::string& text) {
    RecordFile f = read_run_record(s.write(name, text));
    EXPECT_FALSE(f.record) << name;
    return f.problem;
  };
  auto problem_with = [&](const std::string& name, const std::function<void(Json&)>& change) {
    Json j = good;
    change(j);
    return problem(name, j.dump(2));
  };
  const std::string d = s.dir.string() + "/";

  EXPECT_EQ(read_run_record(s.dir / "absent.json").problem, d + "absent.json: cannot open run record");
  EXPECT_EQ(problem("cut.json", "{\n  \"kind\": \"dtbench-run-record\",\n  \"name\": \n"),
            d + "cut.json:4:1: invalid JSON (byte 45)");
  EXPECT_EQ(problem("config.json", config::defaults().dump()), d + "config.json: not a dtbench run record");
  EXPECT_EQ(problem("list.json", "[1, 2]"), d + "list.json: not a dtbench run record");
  EXPECT_EQ(problem_with("future.json", [](Json& j) { j["schema_version"] = 2; }),
            d + "future.json: /schema_version: version 2 is newer than this dtbench reads (1)");
  EXPECT_EQ(problem_with("missing.json", [](Json& j) { j["throughput"].erase("images_per_second"); }),
            d + "missing.json: /throughput/images_per_second: missing");
  EXPECT_EQ(problem_with("steady.json", [](Json& j) { j["throughput"]["steady_images_per_second"] = -1; }),
            d + "steady.json: /throughput/steady_images_per_second: expected a number >= 0, got -1");
  EXPECT_EQ(problem_with("ranks.json", [](Json& j) { j["ranks"] = "2"; }),
            d + "ranks.json: /ranks: expected an integer, got \"2\"");
  EXPECT_EQ(problem_with("step.json", [](Json& j) { j["curve"][0]["step"] = 1.5; }),
            d + "step.json: /curve/0/step: expected an integer, got 1.5");
  EXPECT_EQ(problem_with("timing.json", [](Json& j) { j["timing"] = Json::array(); }),
            d + "timing.json: /timing: expected an object, got []");
  EXPECT_EQ(problem_with("status.json", [](Json& j) { j["status"] = "finished"; }),
            d + "status.json: /status: unknown status \"finished\"");
  EXPECT_EQ(problem_with("surprise.json", [](Json& j) { j["surprise"] = 1; }),
            d + "surprise.json: /surprise: unexpected field");
  EXPECT_EQ(problem_with("seed.json", [](Json& j) { j["seed"] = 7; }),
            d + "seed.json: /seed: differs from /config/seed");
  EXPECT_EQ(problem_with("reached.json", [](Json& j) { j["time_to_accuracy"].erase("seconds"); }),
            d + "reached.json: /time_to_accuracy/seconds: missing");
  // A record that contradicts itself (a hunt's edits, each taken as it was and shown in tables): a reversed
  // curve changed the final accuracy; a target "reached" at an accuracy the run never had gave a time to target.
  // The fixture's second point follows its first: 200 steps of 128 samples.
  const auto two_points = [](Json& j) {
    j["curve"].push_back(j["curve"][0]);
    j["curve"][1]["step"] = 200, j["curve"][1]["samples"] = 25600, j["curve"][1]["epoch"] = 0.42;
    j["steps"] = 200, j["samples"] = 25600, j["epochs"] = 0.42;
  };
  EXPECT_EQ(problem_with("reversed.json", [&](Json& j) { two_points(j); std::swap(j["curve"][0], j["curve"][1]); }),
            d + "reversed.json: /curve/1: an evaluation before the one at /curve/0 (its step or epoch is less)");
  EXPECT_EQ(problem_with("samples.json", [](Json& j) { j["curve"][0]["samples"] = int64_t{1000000000000000}; }),
            d + "samples.json: /curve/0/samples: 1000000000000000 is not step 100 times the global batch (128)");
  EXPECT_EQ(problem_with("fake.json", [](Json& j) { j["time_to_accuracy"]["seconds"] = 0.001; }),
            d + "fake.json: /time_to_accuracy: reached, but it is not the first point of /curve at test accuracy >= "
                "its target 0.9 (its step, epoch, samples and seconds)");
  EXPECT_EQ(problem_with("above.json", [](Json& j) { j["time_to_accuracy"]["target"] = 0.99; }),
            d + "above.json: /time_to_accuracy: reached, but it is not the first point of /curve at test accuracy >= "
                "its target 0.99 (its step, epoch, samples and seconds)");
  // The time to accuracy at another target than the run's own (the table showed its time; a hunt), and a run that
  // stopped at its target without reaching it.
  EXPECT_EQ(problem_with("other.json", [](Json& j) { j["time_to_accuracy"]["target"] = 0.5; }),
            d + "other.json: /time_to_accuracy/target: 0.5, but /config/eval/target_accuracy is 0.9");
  EXPECT_EQ(problem_with("stopped.json", [](Json& j) { j["time_to_accuracy"] = {{"target", 0.9}, {"reached", false}}; }),
            d + "stopped.json: /time_to_accuracy/reached: false, but /status is \"reached-target\"");
  // How it ended, against itself (a hunt's edits, each flipping a claim's verdict with exit 0): a curve cut before
  // the last step (its final accuracy an earlier step's), "not reached" where the curve reaches the target, and a
  // "completed" run short of its steps without --stop-at.
  EXPECT_EQ(problem_with("cut-curve.json", [&](Json& j) { two_points(j); j["curve"].erase(1); j["status"] = "completed"; }),
            d + "cut-curve.json: /curve/0/step: the last evaluation is at step 100, but /steps is 200: a finished run "
                "evaluates at its last step (a curve cut short?)");
  EXPECT_EQ(problem_with("unreached.json",
                         [](Json& j) {
                           j["status"] = "completed";
                           j["time_to_accuracy"] = {{"target", 0.9}, {"reached", false}};
                         }),
            d + "unreached.json: /time_to_accuracy/reached: false, but /curve/0 is at test accuracy 0.91, at or above "
                "the target 0.9");
  EXPECT_EQ(problem_with("short.json",
                         [](Json& j) {
                           j["status"] = "completed";
                           j["config"]["eval"]["target_accuracy"] = 0.95, j["time_to_accuracy"] = {{"target", 0.95},
                                                                                                 {"reached", false}};
                           j["extra"]["total_steps"] = 300;
                         }),
            d + "short.json: /steps: 100, but /extra/total_steps is 300 and the run is \"completed\" without --stop-at "
                "(/extra/stop_at)");
  // A diverged run's evaluation where it diverged reaches nothing (trainer.cpp): not a contradiction.
  Json diverged = good;
  diverged["status"] = "diverged";
  diverged["time_to_accuracy"] = {{"target", 0.9}, {"reached", false}};
  EXPECT_TRUE(read_run_record(s.write("diverged.json", diverged.dump())).record);
  // Wall seconds may go back (core/run_record.hpp: results/pbt's members restarted them at each --init-from).
  Json earlier = good;
  two_points(earlier);
  earlier["curve"][1]["wall_seconds"] = 1.0;
  EXPECT_TRUE(read_run_record(s.write("earlier.json", earlier.dump())).record);
  // A rank count is a positive int: 0 or 2^40 would divide by zero or be cut to another count.
  EXPECT_EQ(problem_with("ranks0.json", [](Json& j) { j["ranks"] = 0; }),
            d + "ranks0.json: /ranks: expected an integer from 1 to 2147483647, got 0");
  EXPECT_EQ(problem_with("ranks40.json", [](Json& j) { j["ranks"] = int64_t{1} << 40; }),
            d + "ranks40.json: /ranks: expected an integer from 1 to 2147483647, got 1099511627776");
  // The schema's value ranges: a negative epoch count or an accuracy of 5 would reach tables and RCP files.
  EXPECT_EQ(problem_with("epoch.json", [](Json& j) { j["time_to_accuracy"]["epoch"] = -7.5; }),
            d + "epoch.json: /time_to_accuracy/epoch: expected a number >= 0, got -7.5");
  EXPECT_EQ(problem_with("accuracy.json", [](Json& j) { j["curve"][0]["test_accuracy"] = 5.0; }),
            d + "accuracy.json: /curve/0/test_accuracy: expected a number from 0 to 1, got 5.0");
  EXPECT_EQ(problem_with("target.json", [](Json& j) { j["time_to_accuracy"]["target"] = 5; }),
            d + "target.json: /time_to_accuracy/target: expected a number from 0 to 1, got 5");
  EXPECT_EQ(problem_with("ips.json", [](Json& j) { j["throughput"]["images_per_second"] = -100; }),
            d + "ips.json: /throughput/images_per_second: expected a number >= 0, got -100");
  EXPECT_EQ(problem_with("batch.json", [](Json& j) { j["global_batch"] = 0; }),
            d + "batch.json: /global_batch: expected an integer from 1 to 9223372036854775807, got 0");
  EXPECT_EQ(problem_with("steps.json", [](Json& j) { j["steps"] = -1; }),
            d + "steps.json: /steps: expected an integer from 0 to 9223372036854775807, got -1");
  EXPECT_EQ(problem_with("wait.json", [](Json& j) { j["timing"]["exposed_comm"] = -0.5; }),
            d + "wait.json: /timing/exposed_comm: expected a number >= 0, got -0.5");
  // The fields of /extra that tables read, in the schema's ranges (an RCP file took a learning rate "fast" and a
  // warmup of -5 steps; a hunt).
  EXPECT_EQ(problem_with("peak.json", [](Json& j) { j["extra"]["peak_lr"] = "fast"; }),
            d + "peak.json: /extra/peak_lr: expected a number, got \"fast\"");
  EXPECT_EQ(problem_with("warm.json", [](Json& j) { j["extra"]["warmup_steps"] = -5; }),
            d + "warm.json: /extra/warmup_steps: expected an integer from 0 to 9223372036854775807, got -5");
  EXPECT_EQ(problem_with("stop.json", [](Json& j) { j["extra"]["stop_at"] = 0; }),
            d + "stop.json: /extra/stop_at: expected an integer from 1 to 9223372036854775807, got 0");
  EXPECT_EQ(problem("nan.json", "{\"kind\": \"dtbench-run-record\", \"wall_seconds\": NaN}"),
            d + "nan.json:1:48: invalid JSON (byte 47)");
}

TEST(RunRecord, TellsJsonOfAnotherKindFromABrokenRecord) {
  // A folder of records also holds configs and indexes: those are no record at all, while a record
  // that is cut short or of the wrong shape is one that cannot be read.
  Scratch s;
  Json wrong = full_record().to_json();
  wrong["ranks"] = "2";
  const std::string cut = full_record().to_json().dump().substr(0, 100);
  for (const auto& [name, text, other_kind] :
       {std::tuple<std::string, std::string, bool>{"config.json", config::defaults().dump(), true},
        {"list.json", "[1, 2]", true},
        {"kindless.json", "{\"ranks\": 2}", true},
        {"cut.json", cut, false},
        {"wrong.json", wrong.dump(), false},
        {"empty.json", "", false}}) {
    const RecordFile f = read_run_record(s.write(name, text));
    EXPECT_FALSE(f.record) << name;
    EXPECT_EQ(f.other_kind, other_kind) << name << ": " << f.problem;
  }
  EXPECT_FALSE(read_run_record(s.dir / "absent.json").other_kind);
}

TEST(RunRecord, DoneRule) {
  RunRecord r;
  for (auto [status, done] : {std::pair{RunStatus::completed, true}, std::pair{RunStatus::reached_target, true},
                              std::pair{RunStatus::diverged, true}, std::pair{RunStatus::failed, false},
                              std::pair{RunStatus::preempted, false}}) {
    r.status = status;
    EXPECT_EQ(r.done(), done) << to_string(status);
  }
}

// A key added after a record was written, at its neutral default, is no difference: /data/synthetic/seed at -1 draws
// from the run's /seed as every earlier run did, so a record without it is the same config at a rerun. Another
// value is a difference.
TEST(RunRecord, AKeyAddedLaterAtItsNeutralDefaultIsNoDifference) {
  Json old = config::defaults();
  old["data"]["synthetic"].erase("seed");
  Json now = config::defaults();
  ASSERT_EQ(now["data"]["synthetic"]["seed"], -1);
  EXPECT_EQ(config_difference(old, now), "");
  now["data"]["synthetic"]["seed"] = 7;
  EXPECT_EQ(config_difference(old, now), "/data/synthetic/seed");
  EXPECT_EQ(config_difference(now, old), "/data/synthetic/seed");
  // /eval/test_samples at 0 (the whole test set), which the committed full-scale campaigns' records predate: a
  // rerun of `reproduce --scale full` over them was refused at it, and now has 0 runs to do.
  old = config::defaults();
  old["eval"].erase("test_samples");
  EXPECT_EQ(config_difference(old, config::defaults()), "");
}

// The provenance holds texts of the environment, which are bytes: an invalid UTF-8 byte becomes U+FFFD instead of
// failing the record's JSON after the run (found by an adversarial hunt: SLURM_JOB_NAME=$'n\xff' under Slurm).
TEST(Provenance, NonUtf8EnvironmentBecomesReplacementCharacters) {
  ::setenv("SLURM_JOB_ID", "7\xff", 1);
  const Json p = provenance();
  ::unsetenv("SLURM_JOB_ID");
  EXPECT_EQ(p["slurm"]["job_id"].get<std::string>(), "7\xef\xbf\xbd");
  EXPECT_NO_THROW(p.dump());
}

// The memory cgroup's limit, from a /proc/self/cgroup and a /sys/fs/cgroup written here: v2's memory.max and v1's
// memory.limit_in_bytes, the least along the path (a job's limit below its step's "max"), levels this namespace
// does not show skipped, and no limit ("max", v1's 2^63 - 4096, no memory line) as 0.
TEST(Provenance, MemoryCgroupLimitIsTheLeastAlongThePath) {
  namespace fs = std::filesystem;
  const fs::path d = fs::temp_directory_path() / ("dtbench-cgroup-" + std::to_string(::getpid()));
  fs::remove_all(d);
  const auto put = [&](const fs::path& rel, const std::string& text) {
    fs::create_directories((d / rel).parent_path());
    std::ofstream(d / rel) << text;
  };
  const std::string root = (d / "sys").string(), self = (d / "self").string();
  // cgroup v2, as slurmd's cgroup/v2 plugin lays a job out: the job's limit, its step's none.
  put("sys/memory.max", "max\n");
  put("sys/system.slice/slurmstepd.scope/job_7/memory.max", "4294967296\n");
  put("sys/system.slice/slurmstepd.scope/job_7/step_0/memory.max", "max\n");
  put("self", "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n");
  EXPECT_EQ(dtbench::cgroup_memory_limit(self, root), 4294967296.0);
  // cgroup v1 on a hybrid machine, the path not shown in this namespace below its first level.
  fs::remove_all(d);
  put("sys/memory/memory.limit_in_bytes", "9223372036854771712\n");
  put("sys/memory/process_api/memory.limit_in_bytes", "2147483648\n");
  put("self", "9:name=systemd:/\n4:memory:/process_api/e6f1c486\n0::/\n");
  EXPECT_EQ(dtbench::cgroup_memory_limit(self, root), 2147483648.0);
  // None.
  put("sys/memory/process_api/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(dtbench::cgroup_memory_limit(self, root), 0.0);
  put("self", "1:cpu:/\n");
  EXPECT_EQ(dtbench::cgroup_memory_limit(self, root), 0.0);
  EXPECT_EQ(dtbench::cgroup_memory_limit((d / "absent").string(), root), 0.0);
  fs::remove_all(d);
  // This process: never above the machine's memory.
  EXPECT_GT(dtbench::physical_memory_bytes(), 0.0);
}
