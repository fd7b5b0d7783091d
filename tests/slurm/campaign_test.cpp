// sbatch scripts and campaign bookkeeping: what a script asks Slurm for, that hostile names stay
// inside quotes, how existing records decide what a rerun does, and squeue parsing.
#include <gtest/gtest.h>

#include <tuple>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/crc32.hpp"
#include "core/error.hpp"
#include "core/run_record.hpp"
#include "slurm/campaign.hpp"
#include "slurm/expand.hpp"
#include "slurm/process.hpp"
#include "slurm/sbatch_script.hpp"
#include "slurm/shell.hpp"
#include "slurm/spec.hpp"
#include "slurm/sweep.hpp"

using dtbench::BadInput;
using dtbench::Json;
using namespace dtbench::slurm;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

bool has_line(const std::string& text, const std::string& line) {
  for (const auto& l : lines_of(text))
    if (l == line) return true;
  return false;
}

struct Fixture {
  Spec spec;
  std::vector<Point> points;
  Layout layout;
};

Fixture make(const Json& doc, const fs::path& out) {
  Fixture f;
  f.spec = parse_spec(doc, ".");
  f.layout = make_layout(out, {"/opt/my tools/dtbench", "train"}, "dtbench test");
  f.points = expand(f.spec, f.layout.runs);
  return f;
}

}  // namespace

TEST(Script, GpuRequests) {
  for (const auto& [key, value, line] : std::vector<std::tuple<std::string, Json, std::string>>{
           {"gpus_per_task", 1, "#SBATCH --gpus-per-task=1"}, {"gres", "gpu:a100:4", "#SBATCH --gres=gpu:a100:4"}}) {
    Json doc = {{"name", "g"}, {"base", {{"duration", {{"steps", 10}}}}}, {"slurm", {{"tasks_per_node", 4}, {key, value}}}};
    Fixture f = make(doc, "/scratch/g");
    std::string s = run_script(f.spec, f.points[0], f.points[0].runs[0], f.layout);
    EXPECT_TRUE(has_line(s, line)) << s;
    EXPECT_EQ(s.find("--gpus-per-node"), std::string::npos) << s;
  }
}

TEST(Script, AsksForTheResourcesAndSignalsAndQuotesEverything) {
  Json doc = {{"name", "camp 'a' $(x)"},
              {"base", {{"duration", {{"steps", 10}}}}},
              {"axes", {{"slurm.nodes", {2}}}},
              {"slurm",
               {{"tasks_per_node", 4},
                {"time", "00:10:00"},
                {"partition", "batch"},
                {"gpus_per_node", 4},
                {"sbatch", {"--exclusive"}},
                {"setup", {"module load openmpi"}},
                {"launcher_args", {"--cpu-bind=cores", "x y"}},
                {"signal_seconds", 90}}}};
  Fixture f = make(doc, "/scratch/my runs/100%");
  const dtbench::slurm::Run& r = f.points[0].runs[0];
  std::string s = run_script(f.spec, f.points[0], r, f.layout);
  EXPECT_EQ(lines_of(s)[0], "#!/bin/bash");
  EXPECT_TRUE(has_line(s, "#SBATCH --job-name=\"camp 'a' $(x)/p0-nodes2-s1\"")) << s;
  EXPECT_TRUE(has_line(s, "#SBATCH --nodes=2"));
  EXPECT_TRUE(has_line(s, "#SBATCH --ntasks-per-node=4"));
  EXPECT_TRUE(has_line(s, "#SBATCH --cpus-per-task=1"));
  EXPECT_TRUE(has_line(s, "#SBATCH --gpus-per-node=4"));
  EXPECT_TRUE(has_line(s, "#SBATCH --time=00:10:00"));
  EXPECT_TRUE(has_line(s, "#SBATCH --partition=batch"));
  EXPECT_TRUE(has_line(s, "#SBATCH --requeue"));
  EXPECT_TRUE(has_line(s, "#SBATCH --open-mode=append"));
  EXPECT_TRUE(has_line(s, "#SBATCH --signal=B:USR1@90"));
  EXPECT_TRUE(has_line(s, "#SBATCH --exclusive"));
  EXPECT_TRUE(has_line(s, "#SBATCH --output=\"/scratch/my runs/100%%/runs/p0-nodes2-s1.out\"")) << s;
  EXPECT_TRUE(has_line(s, "#SBATCH --error=\"/scratch/my runs/100%%/runs/p0-nodes2-s1.err\""));
  EXPECT_TRUE(has_line(s, "module load openmpi"));
  EXPECT_TRUE(has_line(s, "config='/scratch/my runs/100%/configs/p0-nodes2-s1.json'"));
  EXPECT_TRUE(has_line(s, "launch=('srun' '--mpi=pmix' '--kill-on-bad-exit=1' '--cpu-bind=cores' 'x y' '/opt/my tools/dtbench' 'train' "
                          "\"$config\" '--resume')"))
      << s;
  // All #SBATCH lines come before the first command, or sbatch ignores them.
  bool body = false;
  for (const auto& l : lines_of(s)) {
    if (l.rfind("#SBATCH", 0) == 0) EXPECT_FALSE(body) << l;
    else if (!l.empty() && l[0] != '#') body = true;
  }
  // bash accepts the script.
  fs::path tmp = fs::temp_directory_path() / ("dtbench-script-" + std::to_string(::getpid()) + ".sh");
  dtbench::write_file_atomic(tmp, s, false);
  EXPECT_EQ(run_capture({"bash", "-n", tmp.string()}).exit_code, 0);
  fs::remove(tmp);
}

TEST(Script, MpirunLauncherAndNoSignal) {
  Json doc = {{"name", "m"},
              {"base", {{"duration", {{"steps", 10}}}}},
              {"slurm", {{"launcher", "mpirun"}, {"signal_seconds", 0}}}};
  Fixture f = make(doc, "/o");
  std::string s = run_script(f.spec, f.points[0], f.points[0].runs[0], f.layout);
  EXPECT_TRUE(has_line(s, "launch=('mpirun' '/opt/my tools/dtbench' 'train' \"$config\" '--resume')")) << s;
  EXPECT_EQ(s.find("#SBATCH --signal"), std::string::npos);
}

// A rank's CPUs reach it: srun no longer takes --cpus-per-task from the job (Slurm 22.05) and mpirun binds a rank to
// one core, so `threads: 0` found one CPU. The spec's own launcher options come after (srun's last one wins) or
// replace mpirun's binding. The spec's set-up lines run before `set -u` (a conda activate reads $PS1).
TEST(Script, EveryRankGetsItsCpusPerTask) {
  const auto launch = [](Json slurm) {
    Json doc = {{"name", "c"}, {"base", {{"duration", {{"steps", 10}}}}}, {"slurm", std::move(slurm)}};
    Fixture f = make(doc, "/o");
    const std::string s = run_script(f.spec, f.points[0], f.points[0].runs[0], f.layout);
    for (const auto& l : lines_of(s))
      if (l.rfind("launch=(", 0) == 0) return l;
    return std::string("no launch line in ") + s;
  };
  EXPECT_EQ(launch({{"cpus_per_task", 8}}),
            "launch=('srun' '--mpi=pmix' '--kill-on-bad-exit=1' '--cpus-per-task=8' '/opt/my tools/dtbench' 'train' "
            "\"$config\" '--resume')");
  EXPECT_EQ(launch({{"cpus_per_task", 1}}),
            "launch=('srun' '--mpi=pmix' '--kill-on-bad-exit=1' '/opt/my tools/dtbench' 'train' \"$config\" '--resume')");
  EXPECT_EQ(launch({{"cpus_per_task", 4}, {"launcher", "mpirun"}}),
            "launch=('mpirun' '--bind-to' 'none' '/opt/my tools/dtbench' 'train' \"$config\" '--resume')");
  // The submitting shell's Open MPI variables are not the job's to go by (a module that sets a binding policy).
  setenv("OMPI_MCA_hwloc_base_binding_policy", "core", 1);
  EXPECT_EQ(launch({{"cpus_per_task", 4}, {"launcher", "mpirun"}}),
            "launch=('mpirun' '--bind-to' 'none' '/opt/my tools/dtbench' 'train' \"$config\" '--resume')");
  unsetenv("OMPI_MCA_hwloc_base_binding_policy");
  EXPECT_EQ(launch({{"cpus_per_task", 4}, {"launcher", "mpirun"}, {"launcher_args", {"--map-by", "slot:PE=4"}}}),
            "launch=('mpirun' '--map-by' 'slot:PE=4' '/opt/my tools/dtbench' 'train' \"$config\" '--resume')");
  // A binding through an MCA parameter is the spec's too (`--bind-to none` before it turned it off).
  EXPECT_EQ(launch({{"cpus_per_task", 4}, {"launcher", "mpirun"},
                    {"launcher_args", {"--mca", "hwloc_base_binding_policy", "core"}}}),
            "launch=('mpirun' '--mca' 'hwloc_base_binding_policy' 'core' '/opt/my tools/dtbench' 'train' \"$config\" "
            "'--resume')");
  Json doc = {{"name", "u"}, {"base", {{"duration", {{"steps", 10}}}}}, {"slurm", {{"setup", {"source activate x"}}}}};
  Fixture f = make(doc, "/o");
  const std::string s = run_script(f.spec, f.points[0], f.points[0].runs[0], f.layout);
  ASSERT_NE(s.find("set -u\n"), std::string::npos);
  EXPECT_LT(s.find("source activate x\n"), s.find("set -u\n"));
  // The script's own variable is kept from the set-up lines (bash puts it back; the array test below runs it).
  EXPECT_LT(s.find("dtbench_own=$(declare -p config)\n"), s.find("source activate x\n"));
  EXPECT_LT(s.find("source activate x\n"), s.find("eval \"$dtbench_own\"\n"));
}

TEST(Script, ArrayGroupsShareTheirSlurmSection) {
  Json doc = {{"name", "a"},
              {"base", {{"duration", {{"steps", 10}}}}},
              {"axes", {{"reducer.name", {"ring", "tree"}}, {"slurm.nodes", {1, 2}}}},
              {"repeats", 2},
              {"slurm", {{"array", true}}}};
  Fixture f = make(doc, "/o");
  auto groups = array_groups(f.points);
  ASSERT_EQ(groups.size(), 2u);  // nodes 1 and nodes 2
  EXPECT_EQ(groups[0].runs.size(), 4u);
  EXPECT_EQ(groups[0].slurm["nodes"], 1);
  EXPECT_EQ(groups[1].runs[0]->name, "p1-ring-nodes2-s1");
  std::string s = array_script(f.spec, groups[1], 1, f.layout);
  EXPECT_TRUE(has_line(s, "#SBATCH --array=0-3"));
  EXPECT_TRUE(has_line(s, "#SBATCH --nodes=2"));
  EXPECT_TRUE(has_line(s, "#SBATCH --output=/o/runs/array-1-%A_%a.out"));
  EXPECT_TRUE(has_line(s, "run=${runs[$SLURM_ARRAY_TASK_ID]}"));
  // A backslash in the folder turns Slurm's % patterns off: one shared file, not one named %A_%a literally.
  const std::string slashed = array_script(f.spec, groups[1], 1, make(doc, "/o\\b").layout);
  EXPECT_EQ(slashed.find("%A_%a"), std::string::npos) << slashed;
  EXPECT_NE(slashed.find("/runs/array-1.out"), std::string::npos) << slashed;
  // bash maps each task index to its run.
  fs::path tmp = fs::temp_directory_path() / ("dtbench-array-" + std::to_string(::getpid()) + ".sh");
  std::string cut = s.substr(0, s.find("run=${runs"));
  dtbench::write_file_atomic(tmp, cut + "printf '%s\\n' \"${runs[@]}\"\n", false);
  ProcessResult r = run_capture({"bash", tmp.string()});
  EXPECT_EQ(r.out, "p1-ring-nodes2-s1\np1-ring-nodes2-s2\np3-tree-nodes2-s1\np3-tree-nodes2-s2\n");
  // Set-up lines that assign the script's own names leave them as they were (they were set before the set-up lines
  // and a `config=` there ran the job on another config; noticed in stop 58).
  {
    const fs::path dir = fs::temp_directory_path() / ("dtbench-array-own-" + std::to_string(::getpid()));
    Json clobbered = doc;
    clobbered["slurm"]["setup"] = {"config=other.json; run=x; runs=(y); runs_dir=/nowhere", "unset config",
                                   "echo continued \\"};  // a last line that continues onto the next
    Fixture c = make(clobbered, dir);
    fs::create_directories(c.layout.runs);
    const std::string script = array_script(c.spec, array_groups(c.points)[1], 1, c.layout);
    dtbench::write_file_atomic(tmp, script.substr(0, script.find("launch=(")) +
                                        "printf '%s|%s|%s|%s\\n' \"$run\" \"$runs_dir\" \"$config\" \"${runs[*]}\" >&3\n",
                               false);
    ProcessResult own = run_capture({"bash", "-c", "SLURM_ARRAY_TASK_ID=2 bash \"$0\" 3>&1", tmp.string()});
    EXPECT_EQ(own.out, "p3-tree-nodes2-s1|" + c.layout.runs.string() + "|" + c.layout.configs.string() +
                           "/p3-tree-nodes2-s1.json|p1-ring-nodes2-s1 p1-ring-nodes2-s2 p3-tree-nodes2-s1 "
                           "p3-tree-nodes2-s2\n")
        << script;
    fs::remove_all(dir);
  }
  fs::remove(tmp);
  Json idx = campaign_index(f.spec, f.points, f.layout, true).to_json();
  EXPECT_EQ(idx["points"][3]["runs"][1]["script"], "scripts/array-1.sbatch");
  EXPECT_EQ(idx["points"][3]["runs"][1]["array_task"], 3);
  EXPECT_EQ(idx["points"][3]["runs"][1]["record"], "runs/p3-tree-nodes2-s2.json");
  // Every run's script and task are the ones that run it: the slurm.nodes axis is the inner one, so the groups'
  // tasks interleave in point order (the index once gave p1's runs tasks 2 and 3 of array-0, p2's).
  for (const Json& p : idx["points"])
    for (const Json& run : p["runs"]) {
      const std::string script = run["script"];
      const size_t g = script == "scripts/array-0.sbatch" ? 0 : script == "scripts/array-1.sbatch" ? 1 : 9;
      ASSERT_LT(g, groups.size()) << script;
      EXPECT_EQ(groups[g].runs.at(run["array_task"].get<size_t>())->name, run["name"]) << run.dump();
    }
}

TEST(Campaign, RecordStateDecidesWhatARerunDoes) {
  fs::path dir = fs::temp_directory_path() / ("dtbench-campaign-" + std::to_string(::getpid()));
  // A target, so that a reached-target record can be one (it reached it at its curve's first point).
  Json doc = {{"name", "r"}, {"base", {{"duration", {{"steps", 10}}}, {"eval", {{"target_accuracy", 0.5}}}}}};
  Fixture f = make(doc, dir);
  const dtbench::slurm::Run& run = f.points[0].runs[0];
  fs::create_directories(f.layout.runs);
  fs::path rec = record_path(f.layout, run);
  std::string detail;
  EXPECT_EQ(record_state(rec, run.config, detail), RunState::missing);

  dtbench::RunRecord r;
  r.name = run.name;
  r.config = run.config;
  r.global_batch = r.per_rank_batch = 128;
  r.started_utc = r.finished_utc = dtbench::utc_timestamp();
  for (auto [status, want] : {std::pair{dtbench::RunStatus::completed, RunState::done},
                              std::pair{dtbench::RunStatus::reached_target, RunState::done},
                              std::pair{dtbench::RunStatus::diverged, RunState::done},
                              std::pair{dtbench::RunStatus::preempted, RunState::preempted},
                              std::pair{dtbench::RunStatus::failed, RunState::failed}}) {
    r.status = status;
    r.status_detail = status == dtbench::RunStatus::failed ? "rank 1 died" : "";
    r.target_accuracy = 0.5;
    r.curve.clear();
    r.time_to_accuracy.reset();
    if (status == dtbench::RunStatus::reached_target) {
      r.curve.push_back({0.1, 10, 1280, 1.5, 0.4, 0.3, 0.6, 0.2, std::nullopt, std::nullopt, std::nullopt});
      r.time_to_accuracy = dtbench::TimeToAccuracy{1.5, 10, 0.1, 1280};
    }
    dtbench::write_json_atomic(rec, r.to_json(), false);
    // A synchronous run's preempted record stands beside its checkpoint (written first).
    if (status == dtbench::RunStatus::preempted) fs::create_directories(dtbench::beside_record(rec, ".ckpt"));
    EXPECT_EQ(record_state(rec, run.config, detail), want) << dtbench::to_string(status);
  }
  EXPECT_EQ(detail, "failed: rank 1 died");
  fs::path moved = move_failed_record(f.layout, run);
  EXPECT_FALSE(fs::exists(rec));
  EXPECT_TRUE(fs::exists(moved));
  EXPECT_EQ(moved.parent_path(), f.layout.runs / "failed");

  // A synchronous run's preempted record whose checkpoint is gone: `train --resume` refuses the pair, so the run is
  // run again as a failed one (the sweep said "restarting from the start" and every rerun failed).
  fs::remove_all(dtbench::beside_record(rec, ".ckpt"));
  r.status = dtbench::RunStatus::preempted;
  r.status_detail = "";
  dtbench::write_json_atomic(rec, r.to_json(), false);
  EXPECT_EQ(record_state(rec, run.config, detail), RunState::failed);
  EXPECT_EQ(detail, "preempted (its checkpoint is gone: run again from the start)");
  fs::remove(rec);

  // Stopped by train --stop-at before its last step: a part of the run, run again (the sweep skipped it as complete
  // at every rerun, where the table said "stopped"; a hunt).
  r.status = dtbench::RunStatus::completed;
  r.steps = 2;
  r.extra = {{"stop_at", 2}, {"total_steps", 10}};
  dtbench::write_json_atomic(rec, r.to_json(), false);
  EXPECT_EQ(record_state(rec, run.config, detail), RunState::failed);
  EXPECT_EQ(detail, "completed (stopped at step 2 of 10 by train --stop-at: a part of the run; run again)");
  r.extra = Json::object();
  r.steps = 10;
  fs::remove(rec);

  // A finished run whose weights file (output.save_weights) is gone or is not the one it wrote is run again: a rerun
  // skipped it as done, and its claim read inconclusive for good (a hunt). The file checked as reproduce reads it:
  // 3 floats, their CRC-32 in the record. Polling (--wait) does not read it.
  {
    r.status = dtbench::RunStatus::completed;
    const std::string floats(3 * sizeof(float), '\x01');
    r.extra["weights"] = {{"file", rec.stem().string() + ".weights"}, {"floats", 3}, {"parameters", 3},
                          {"crc32", dtbench::crc32_hex(floats)}};
    dtbench::write_json_atomic(rec, r.to_json(), false);
    const fs::path weights = dtbench::beside_record(rec, ".weights");
    EXPECT_EQ(record_state(rec, run.config, detail), RunState::failed);
    EXPECT_EQ(detail, "completed (" + weights.string() + ": missing, not a regular file, or not 3 floats: run again)");
    EXPECT_EQ(record_state(rec, run.config, detail, 0, /*polling=*/true), RunState::done);
    dtbench::write_file_atomic(weights, floats, false);
    EXPECT_EQ(record_state(rec, run.config, detail), RunState::done);
    dtbench::write_file_atomic(weights, std::string(3 * sizeof(float), '\x02'), false);
    EXPECT_EQ(record_state(rec, run.config, detail), RunState::failed);
    EXPECT_NE(detail.find(": not the file this run wrote: run again)"), std::string::npos) << detail;
    // A sweep's second look under its lock at a record its first look found done does not read the file again.
    EXPECT_EQ(record_state(rec, run.config, detail, 0, /*polling=*/false, /*weights_checked=*/true), RunState::done);
    fs::remove(weights);
    fs::remove(rec);
    r.extra.erase("weights");
  }

  // A record from another config (here: another learning rate) is never taken for this run's.
  r.status = dtbench::RunStatus::completed;
  r.config["optimizer"]["lr"] = 0.5;
  dtbench::write_json_atomic(rec, r.to_json(), false);
  try {
    record_state(rec, run.config, detail);
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), rec.string() + ": made from a different config than this spec gives (first "
                                                    "difference at /optimizer/lr); use another --out, or move the old record away");
  }
  // A record the reader cannot read stops the sweep with the reader's reason.
  dtbench::write_json_atomic(rec, {{"kind", "dtbench-run-record"}, {"status", "completed"}}, false);
  try {
    record_state(rec, run.config, detail);
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), rec.string() + ": /schema_version: missing");
  }
  // The /output section may differ (a campaign folder that was moved).
  r.config = run.config;
  r.config["output"]["dir"] = "/elsewhere/runs";
  dtbench::write_json_atomic(rec, r.to_json(), false);
  EXPECT_EQ(record_state(rec, run.config, detail), RunState::done);
  // A record made on another rank count than the spec's point (its /slurm changed between two sweeps) was skipped
  // as done under the new index and scripts.
  EXPECT_EQ(record_state(rec, run.config, detail, r.ranks), RunState::done);
  try {
    record_state(rec, run.config, detail, r.ranks + 1);
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), rec.string() + ": made on " + std::to_string(r.ranks) +
                                         (r.ranks == 1 ? " rank" : " ranks") + ", where this spec runs it on " + std::to_string(r.ranks + 1) + " (/slurm nodes x tasks_per_node); "
                                     "use another --out, or move the old record away");
  }
  fs::remove_all(dir);
}

TEST(Campaign, IndexReadsBackWhatTheSweepWrote) {
  fs::path dir = fs::temp_directory_path() / ("dtbench-index-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Json doc = {{"name", "i"},
              {"description", "two reducers"},
              {"base", {{"duration", {{"steps", 10}}}}},
              {"axes", {{"reducer.name", {"ring", "tree"}}}},
              {"zip", {{{"batch.global", {128, 256}}, {"optimizer.lr", {0.1, 0.2}}}}},
              {"repeats", 2}};
  for (bool arrays : {false, true}) {
    Fixture f = make(doc, dir);
    write_campaign(f.spec, f.points, f.layout, arrays);
    const fs::path file = dir / "campaign.json";
    dtbench::CampaignIndex idx = dtbench::read_campaign_index(file);
    EXPECT_EQ(idx.to_json(), dtbench::read_json_file(file.string(), "index"));  // the file, exactly
    EXPECT_EQ(idx.name, "i");
    ASSERT_EQ(idx.axes.size(), 2u);
    EXPECT_EQ(idx.axes[1].keys, (std::vector<std::string>{"batch.global", "optimizer.lr"}));
    ASSERT_EQ(idx.points.size(), 4u);
    EXPECT_EQ(idx.points[3].values, f.points[3].values);
    EXPECT_EQ(idx.points[3].runs[1].record, "runs/" + f.points[3].runs[1].name + ".json");
    EXPECT_EQ(idx.points[3].runs[1].array_task, arrays ? 7 : -1);
    fs::remove_all(dir);
  }

  // What is wrong with an index that is not the sweep's, by JSON pointer.
  Fixture f = make(doc, dir);
  Json idx = campaign_index(f.spec, f.points, f.layout, false).to_json();
  idx["points"][1]["runs"][0].erase("record");
  try {
    dtbench::CampaignIndex::from_json(idx);
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_STREQ(e.what(), "/points/1/runs/0/record: missing");
  }
  idx["kind"] = "dtbench-run-record";
  EXPECT_THROW(dtbench::CampaignIndex::from_json(idx), BadInput);
}

TEST(Campaign, SubmissionsRoundTrip) {
  fs::path jobs = fs::temp_directory_path() / ("dtbench-jobs-" + std::to_string(::getpid()) + ".json");
  append_submissions(jobs, {{"p0-s1", "41", -1}}, "scripts/p0-s1.sbatch");
  append_submissions(jobs, {{"p1-s1", "42", 0}, {"p2-s1", "42", 1}}, "scripts/array-0.sbatch");
  auto subs = read_submissions(jobs);
  ASSERT_EQ(subs.size(), 3u);
  EXPECT_EQ(subs[0].run, "p0-s1");
  EXPECT_EQ(subs[0].array_task, -1);
  EXPECT_EQ(subs[2].job_id, "42");
  EXPECT_EQ(subs[2].array_task, 1);
  // A damaged list is bad input naming the file and the pointer (it leaked nlohmann's type errors as internal errors).
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"[1, 2]", "/: expected an object, got [1,2]"},
           {R"({"submissions": 5})", "/submissions: expected a list"},
           {R"({"submissions": [{"run": 5, "job_id": "1"}]})", "/submissions/0/run: expected a string, got 5"},
           {R"({"submissions": [{"run": "p0", "job_id": "1", "array_task": "x"}]})", "/submissions/0/array_task: expected an integer"}}) {
    std::ofstream(jobs) << text;
    for (int append = 0; append < 2; ++append)
      try {
        if (append) append_submissions(jobs, {{"p0-s1", "41", -1}}, "scripts/p0-s1.sbatch");
        else read_submissions(jobs);
        ADD_FAILURE() << text;
      } catch (const BadInput& e) {
        EXPECT_EQ(std::string(e.what()).rfind(jobs.string() + ": " + message, 0), 0u) << e.what();
      }
  }
  fs::remove(jobs);
}

TEST(Campaign, SqueueParsing) {
  // Lines as `squeue -h -o %A|%F|%K|%T` prints them (taken from Slurm 22.05).
  auto jobs = parse_squeue("3|1|0|RUNNING\n1|1|5-7,9|PENDING\n2|2|N/A|PENDING\n8|8|[0-3%2]|PENDING\ngarbage\n");
  ASSERT_EQ(jobs.size(), 4u);
  EXPECT_EQ(jobs[1].tasks, (std::vector<int64_t>{5, 6, 7, 9}));
  EXPECT_TRUE(jobs[2].tasks.empty());
  EXPECT_EQ(jobs[3].tasks, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_NE(find_job({"r", "2", -1}, jobs), nullptr);
  EXPECT_EQ(find_job({"r", "2", -1}, jobs)->state, "PENDING");
  EXPECT_EQ(find_job({"r", "5", -1}, jobs), nullptr);
  EXPECT_EQ(find_job({"r", "1", 0}, jobs)->state, "RUNNING");
  EXPECT_NE(find_job({"r", "1", 9}, jobs), nullptr);
  EXPECT_EQ(find_job({"r", "1", 4}, jobs), nullptr);
  EXPECT_NE(find_job({"r", "8", 2}, jobs), nullptr);
  // Messages name an array task as scancel takes it (they said the whole array's id; noticed in stop 59).
  EXPECT_EQ(job_label({"r", "8", 2}), "8_2");
  EXPECT_EQ(job_label({"r", "8", -1}), "8");
  // With the reason (%r), as the queue is asked now.
  jobs = parse_squeue("4|4|N/A|PENDING|JobHeldAdmin\n5|5|N/A|RUNNING|None\n");
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].reason, "JobHeldAdmin");
  EXPECT_EQ(jobs[1].state, "RUNNING");
  EXPECT_EQ(shown_state(jobs[0]), "PENDING (JobHeldAdmin)");
  EXPECT_EQ(shown_state(jobs[1]), "RUNNING");
  EXPECT_EQ(shown_state({"6", "6", {}, "PENDING", "Priority"}), "PENDING");
}

// What sbatch printed, as sites print it: --parsable's "ID" or "ID;cluster", after a wrapper's banner, or the plain
// "Submitted batch job ID" of a wrapper that drops --parsable. A banner alone, or nothing, is no id (each of these
// lost a queued job: the sweep said "printed no job id" and the rerun queued the run again; found by a review).
TEST(Campaign, SbatchJobIdFromWhatSitesPrint) {
  EXPECT_EQ(sbatch_job_id("4242\n"), "4242");
  EXPECT_EQ(sbatch_job_id("4242;gpu\n"), "4242");
  EXPECT_EQ(sbatch_job_id(" 4242 \n"), "4242");
  EXPECT_EQ(sbatch_job_id("Welcome to the cluster. Quota: 80% used\n4242\n"), "4242");
  EXPECT_EQ(sbatch_job_id("Submitted batch job 501 on cluster X\n"), "501");
  EXPECT_EQ(sbatch_job_id("Submitted batch job 501\n"), "501");
  EXPECT_EQ(sbatch_job_id("Welcome to the cluster\n"), "");
  EXPECT_EQ(sbatch_job_id(""), "");
  EXPECT_EQ(sbatch_job_id("-1\n"), "");
}

// A stand-in squeue first on PATH for the object's life (SBATCH_CLUSTERS unset, which would add --clusters): a
// folder of its own holding the script `text(folder)` returns.
struct StandInSqueue {
  fs::path dir;
  std::string path = std::getenv("PATH");
  StandInSqueue(const std::string& name, const std::function<std::string(const fs::path&)>& text)
      : dir(fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "squeue") << text(dir);
    fs::permissions(dir / "squeue", fs::perms::owner_all);
    setenv("PATH", (dir.string() + ":" + path).c_str(), 1);
    unsetenv("SBATCH_CLUSTERS");
  }
  ~StandInSqueue() {
    setenv("PATH", path.c_str(), 1);
    fs::remove_all(dir);
  }
};

// squeue as the queue is asked: every user and partition, array task lists whole (SLURM_BITSTR_LEN=0), and asked
// again while it fails within the patience (a stand-in squeue on PATH that fails twice, then prints what it was given).
TEST(Campaign, TheQueueIsAskedWholeAndAgainAfterAFailure) {
  StandInSqueue squeue("dtbench-squeue", [](const fs::path& dir) {
    return "#!/bin/sh\nn=$(cat " + (dir / "calls").string() + " 2>/dev/null || echo 0)\n" +
           "echo $((n + 1)) > " + (dir / "calls").string() + "\n" +
           "[ \"$n\" -lt 2 ] && { echo 'slurm_load_jobs error: Socket timed out on send/recv operation' >&2; exit 1; }\n"
           "echo \"7|7|$SLURM_BITSTR_LEN|$(echo \"$*\" | tr '|' ,)|${SQUEUE_STATES:-unset}\"\n";
  });
  setenv("SQUEUE_STATES", "RUNNING", 1);  // a user's filter, which would hide the campaign's pending jobs
  try {
    query_queue(0);
    ADD_FAILURE() << "a failed squeue was taken with no patience";
  } catch (const dtbench::RunFailed& e) {
    EXPECT_EQ(std::string(e.what()), "squeue failed (exit 1): slurm_load_jobs error: Socket timed out on send/recv operation");
  }
  std::ostringstream log;
  const auto jobs = query_queue(60, &log);  // the second call fails, the third answers, after 1 s
  EXPECT_EQ(log.str(), "\n  squeue failed (exit 1): slurm_load_jobs error: Socket timed out on send/recv operation; "
                       "asking again in 1 s\n");
  unsetenv("SQUEUE_STATES");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].job_id, "7");
  EXPECT_EQ(jobs[0].tasks, (std::vector<int64_t>{0}));  // SLURM_BITSTR_LEN=0 read as the task list
  EXPECT_EQ(jobs[0].state, "-h --all -o %A,%F,%K,%T,%r");
  EXPECT_EQ(jobs[0].reason, "unset");
}

// With `ended`, the queue is asked with `-t all` and split: the jobs still in it, and those that ended with the state
// Slurm gave them (a stand-in squeue that prints the ended ones only when asked for every state, as squeue does).
// A state the list does not know stays in the queue: waiting on it is safe, taking it for ended is not.
TEST(Campaign, EndedJobsAreToldFromTheQueueWithTheirFinalState) {
  for (const char* s : {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "BOOT_FAIL",
                        "DEADLINE", "OUT_OF_MEMORY", "REVOKED"})
    EXPECT_TRUE(is_final_state(s)) << s;
  for (const char* s : {"PENDING", "RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD",
                        "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "SPECIAL_EXIT", "", "cancelled"})
    EXPECT_FALSE(is_final_state(s)) << s;
  StandInSqueue squeue("dtbench-squeue-ended", [](const fs::path&) {
    return "#!/bin/sh\necho '10|10|N/A|RUNNING|None'\necho '12|11|3|PENDING|Priority'\n"
           "case \"$*\" in *'-t all'*) echo '9|9|N/A|CANCELLED|None'; echo '13|11|1|PREEMPTED|None';"
           " echo '14|14|N/A|NEW_STATE|None' ;; esac\n";
  });
  EXPECT_EQ(query_queue(0).size(), 2u);  // asked as before: the queue only
  std::vector<ActiveJob> ended;
  const auto active = query_queue(0, nullptr, &ended);
  ASSERT_EQ(active.size(), 3u);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_NE(find_job({"r", "10", -1}, active), nullptr);
  EXPECT_NE(find_job({"r", "14", -1}, active), nullptr);
  EXPECT_EQ(find_job({"r", "9", -1}, active), nullptr);
  EXPECT_EQ(find_job({"r", "9", -1}, ended)->state, "CANCELLED");
  EXPECT_EQ(find_job({"r", "11", 1}, ended)->state, "PREEMPTED");  // an array's task, by the array's id and index
  EXPECT_EQ(find_job({"r", "11", 1}, active), nullptr);
  EXPECT_NE(find_job({"r", "11", 3}, active), nullptr);
}

// The user's SBATCH_* variables that would override a line of the job script are left out of sbatch's environment
// (sbatch takes the environment over the script: SBATCH_NO_REQUEUE stopped the checkpointed requeue, SBATCH_TIMELIMIT
// replaced the spec's time; a review); one the script has no line for (an account the spec does not set) is kept.
TEST(Campaign, SbatchVariablesThatOverrideTheScriptAreLeftOut) {
  const fs::path dir = fs::temp_directory_path() / ("dtbench-sbatchenv-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream s(dir / "sbatch");
    s << "#!/bin/sh\nenv | grep '^SBATCH_' | sort > " << (dir / "env").string() << "\necho 'Welcome'\necho 77\n";
  }
  fs::permissions(dir / "sbatch", fs::perms::owner_all);
  const std::string script = "#!/bin/bash\n#SBATCH --time=00:10:00\n#SBATCH --requeue\n#SBATCH --partition=batch\n";
  dtbench::write_file_atomic(dir / "job.sbatch", script, false);
  const std::string path = std::getenv("PATH");
  setenv("PATH", (dir.string() + ":" + path).c_str(), 1);
  for (const char* v : {"SBATCH_TIMELIMIT=5", "SBATCH_NO_REQUEUE=1", "SBATCH_ACCOUNT=mine", "SBATCH_WAIT=1"}) putenv(const_cast<char*>(v));
  EXPECT_EQ(overriding_sbatch_variables(script),
            (std::vector<std::string>{"SBATCH_TIMELIMIT", "SBATCH_NO_REQUEUE", "SBATCH_WAIT"}));
  // sbatch --test-only judges the request as it will be submitted (it was given the variables).
  testing::internal::CaptureStderr();
  EXPECT_EQ(sbatch_refuses(script), "");
  {
    std::ifstream in(dir / "env");
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "SBATCH_ACCOUNT=mine\n");
  }
  EXPECT_EQ(submit_job({"sbatch", "--parsable", (dir / "job.sbatch").string()}), "77");
  const std::string said = testing::internal::GetCapturedStderr();
  for (const char* v : {"SBATCH_TIMELIMIT", "SBATCH_NO_REQUEUE", "SBATCH_ACCOUNT", "SBATCH_WAIT"}) unsetenv(v);
  setenv("PATH", path.c_str(), 1);
  std::ifstream in(dir / "env");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "SBATCH_ACCOUNT=mine\n");
  EXPECT_NE(said.find("SBATCH_TIMELIMIT, SBATCH_NO_REQUEUE, SBATCH_WAIT would change the job script's request (sbatch "
                      "takes such variables over its #SBATCH lines); left out of sbatch's environment"),
            std::string::npos)
      << said;
  fs::remove_all(dir);
}

// An #SBATCH line's option in every form sbatch reads it, and the variables that override each (the spec's own
// lines are written as given: "-C x", "--mem 4G", "--constr=x" passed the first matching, by "--option=" text).
TEST(Campaign, SbatchLinesAreReadAsSbatchReadsThem) {
  EXPECT_EQ(sbatch_line_option("--mem 4G"), "mem");
  EXPECT_EQ(sbatch_line_option("--mem=4G"), "mem");
  EXPECT_EQ(sbatch_line_option("--constr=x"), "constraint");
  EXPECT_EQ(sbatch_line_option("--mem-per=2G"), "mem-per");  // ambiguous: mem-per-cpu or mem-per-gpu
  EXPECT_EQ(sbatch_line_option("-C skylake"), "constraint");
  EXPECT_EQ(sbatch_line_option("-tx"), "time");
  EXPECT_EQ(sbatch_line_option("x"), "");
  const std::string script = "#!/bin/bash\n#SBATCH -C skylake\n#SBATCH --mem 4G\n#SBATCH --hint=nomultithread\n"
                             "#SBATCH   \n#SBATCH --exclusive\n";
  for (const char* v : {"SBATCH_CONSTRAINT=a", "SBATCH_MEM_PER_NODE=1G", "SLURM_HINT=compute_bound", "SBATCH_QOS=q"})
    putenv(const_cast<char*>(v));
  EXPECT_EQ(overriding_sbatch_variables(script),
            (std::vector<std::string>{"SBATCH_CONSTRAINT", "SBATCH_MEM_PER_NODE", "SLURM_HINT"}));
  for (const char* v : {"SBATCH_CONSTRAINT", "SBATCH_MEM_PER_NODE", "SLURM_HINT", "SBATCH_QOS"}) unsetenv(v);
  // Every option of a line, bundles as getopt reads them, an option's argument passed over; and the variables of a
  // line's later options, and sbatch's own names for --cpu-freq and --bb (both were missed; a hunt).
  const auto names = [](const std::string& words) {
    std::vector<std::string> n;
    for (const SbatchLineOption& o : sbatch_line_options(words)) n.push_back(o.name + "/" + o.written);
    return n;
  };
  EXPECT_EQ(names("--exclusive --nodes=2"), (std::vector<std::string>{"exclusive/--exclusive", "nodes/--nodes"}));
  // An option's argument in the next word is no option ("--comment -t", "-J -N"), nor a quoted one (a review).
  EXPECT_EQ(names("-HN3 --comment -t"), (std::vector<std::string>{"hold/-H", "nodes/-N", "comment/--comment"}));
  EXPECT_EQ(names("-J -N --exclusive -t 5"), (std::vector<std::string>{"job-name/-J", "exclusive/--exclusive", "time/-t"}));
  EXPECT_EQ(names("--comment=\"sweep -N 2\" --job-name=a\\ -p"), (std::vector<std::string>{"comment/--comment", "job-name/--job-name"}));
  EXPECT_EQ(names("-Cgpu\t--tim=5"), (std::vector<std::string>{"constraint/-C", "time/--tim"}));
  EXPECT_EQ(names("x y"), std::vector<std::string>{});
  for (const char* v : {"SBATCH_EXCLUSIVE=1", "SBATCH_TIMELIMIT=5", "SBATCH_CPU_FREQ_REQ=Low", "SBATCH_BURST_BUFFER=x"})
    putenv(const_cast<char*>(v));
  EXPECT_EQ(overriding_sbatch_variables("#SBATCH --hold --exclusive -t 5\n#SBATCH --cpu-freq=High\n#SBATCH --bb=y\n"),
            (std::vector<std::string>{"SBATCH_EXCLUSIVE", "SBATCH_TIMELIMIT", "SBATCH_CPU_FREQ_REQ", "SBATCH_BURST_BUFFER"}));
  for (const char* v : {"SBATCH_EXCLUSIVE", "SBATCH_TIMELIMIT", "SBATCH_CPU_FREQ_REQ", "SBATCH_BURST_BUFFER"}) unsetenv(v);
}

// A rerun with an edited spec of the same name: the earlier spec's config and script are not this spec's; the sweep
// says so (it was silent, and scripts/ mixed two specs' runs; a hunt), and leaves them where they are.
TEST(Campaign, ARerunWithAnEditedSpecSaysWhichFilesAreNotItsOwn) {
  fs::path dir = fs::temp_directory_path() / ("dtbench-edited-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto sweep = [&](double lr, bool array = false) {
    dtbench::write_json_atomic(dir / "s.json",
                               Json{{"name", "t"}, {"base", {{"duration", {{"steps", 2}}}}},
                                    {"axes", {{"optimizer.lr", {0.1, lr}}}}},
                               false);
    std::ostringstream out;
    dtbench::SweepOptions o{(dir / "s.json").string(), (dir / "c").string()};
    o.array = array;
    dtbench::run_sweep(o, out);
    return out.str();
  };
  EXPECT_EQ(sweep(0.2).find("not written by this sweep"), std::string::npos);
  EXPECT_EQ(sweep(0.2).find("not written by this sweep"), std::string::npos);  // the same spec again: nothing to say
  EXPECT_NE(sweep(0.3).find("2 files under configs/ and scripts/ were not written by this sweep"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "c" / "configs" / "p1-lr0.2-s1.json"));  // left in place
  // The same spec as job arrays: its two per-run scripts are the other script mode's, not this sweep's (they were
  // counted as its own).
  EXPECT_NE(sweep(0.3, true).find("4 files under configs/ and scripts/ were not written by this sweep"),
            std::string::npos);
  fs::remove_all(dir);
}

// srun's MPI plugins as `srun --mpi=list` prints them (Slurm 22.05, taken from the local cluster), and the refusal of
// a plugin srun does not have: every run's `srun --mpi=NAME` would fail at launch ("Cannot create context for
// mpi/NAME") on a site whose Slurm was built without it (pmix is the spec's default).
TEST(Campaign, SrunsMpiPluginsAreReadAndAMissingOneIsNamed) {
  const std::string printed = "MPI plugin types are...\n\tpmix\n\tnone\n\tcray_shasta\n\tpmi2\n"
                              "specific pmix plugin versions available: pmix_v3,pmix_v4\n";
  const std::vector<std::string> plugins = parse_srun_mpi_list(printed);
  EXPECT_EQ(plugins, (std::vector<std::string>{"pmix", "none", "cray_shasta", "pmi2", "pmix_v3", "pmix_v4"}));
  EXPECT_EQ(srun_lacks_mpi(plugins, "pmix"), "");
  EXPECT_EQ(srun_lacks_mpi(plugins, "pmix_v4"), "");
  EXPECT_EQ(srun_lacks_mpi({}, "pmix"), "");  // the list unknown: nothing said, sbatch and srun say what they say
  EXPECT_EQ(parse_srun_mpi_list("srun: fatal: Could not establish a configuration source\n"), std::vector<std::string>{});
  const std::vector<std::string> without = parse_srun_mpi_list("MPI plugin types are...\n\tnone\n\tpmi2\n");
  EXPECT_EQ(srun_lacks_mpi(without, "pmix"),
            "srun here has no MPI plugin \"pmix\", and every run would fail at its launch (`srun --mpi=list`: none, "
            "pmi2); set /slurm/mpi to one of them, or /slurm/launcher to \"mpirun\"");
  // Asked of srun itself: a stand-in on PATH that prints the list on standard error, as Slurm's info() does.
  const fs::path dir = fs::temp_directory_path() / ("dtbench-srun-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream s(dir / "srun");
    s << "#!/bin/sh\n[ \"$1\" = --mpi=list ] || exit 9\nprintf 'MPI plugin types are...\\n\\tnone\\n\\tpmi2\\n' >&2\n";
  }
  fs::permissions(dir / "srun", fs::perms::owner_all);
  const std::string path = std::getenv("PATH");
  setenv("PATH", (dir.string() + ":" + path).c_str(), 1);
  const std::vector<std::string> asked = srun_mpi_plugins();
  setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(asked, (std::vector<std::string>{"none", "pmi2"}));
  fs::remove_all(dir);
}
