// Experiment specs: strict validation with the exact messages a user sees, and grid expansion
// (cartesian product, zipped axes, repeats) checked against hand-counted grids.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "config/run_config.hpp"
#include "core/error.hpp"
#include "slurm/expand.hpp"
#include "slurm/spec.hpp"

using dtbench::BadInput;
using dtbench::Json;
using namespace dtbench::slurm;
namespace fs = std::filesystem;

namespace {

std::string error_of(const Json& doc) {
  try {
    Spec s = parse_spec(doc, ".");
    expand(s, "/tmp/dtbench-spec-test/runs");
  } catch (const BadInput& e) {
    return e.what();
  }
  return "(no error)";
}

Json minimal() { return Json{{"name", "t"}, {"base", {{"duration", {{"steps", 10}}}}}}; }

Json with(Json doc, const std::string& key, Json value) {
  doc[key] = std::move(value);
  return doc;
}

}  // namespace

TEST(Spec, DefaultsAreFilledIn) {
  Spec s = parse_spec(minimal(), ".");
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.repeats, 1);
  EXPECT_EQ(s.slurm["nodes"], 1);
  EXPECT_EQ(s.slurm["launcher"], "srun");
  EXPECT_EQ(s.slurm["mpi"], "pmix");
  EXPECT_EQ(s.slurm["signal_seconds"], 120);
  EXPECT_EQ(s.slurm["time"], "01:00:00");
  EXPECT_EQ(s.local["mpirun_args"], Json::array({"--oversubscribe"}));
  EXPECT_FALSE(s.local.contains("max_jobs"));  // no cap unless the spec sets one
  EXPECT_EQ(parse_spec(with(minimal(), "local", {{"max_jobs", 1}}), ".").local["max_jobs"], 1);
  EXPECT_TRUE(s.program.empty());
  EXPECT_EQ(slurm_defaults(), s.slurm);
}

TEST(Spec, ErrorsNameTheKey) {
  EXPECT_EQ(error_of(with(minimal(), "axis", Json::object())),
            "/axis: unknown key (did you mean \"axes\"?); valid keys here: name, description, base, axes, zip, "
            "repeats, slurm, local, program");
  EXPECT_EQ(error_of(Json{{"base", Json::object()}}), "/name: missing: give the campaign a name");
  EXPECT_EQ(error_of(with(minimal(), "name", "two\nlines")),
            "/name: line breaks and control characters are not allowed, got \"two\\nlines\"");
  // sbatch (Slurm 22.05) refuses job names above 1024 bytes; a job's is the campaign's, '/' and its run's.
  EXPECT_EQ(error_of(with(minimal(), "name", std::string(513, 'x'))), "/name: at most 512 bytes (Slurm's job names carry it), got 513");
  EXPECT_EQ(parse_spec(with(minimal(), "name", std::string(512, 'x')), ".").name.size(), 512u);
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"nodes", 0}})), "/slurm/nodes: expected an integer in [1, 100000], got 0");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"node", 2}})),
            "/slurm/node: unknown key (did you mean \"nodes\"?); valid keys here: nodes, tasks_per_node, "
            "cpus_per_task, gpus_per_node, gpus_per_task, gres, time, partition, account, qos, sbatch, setup, launcher, launcher_args, "
            "mpi, signal_seconds, array");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"gres", "gpu 4"}})),
            "/slurm/gres: expected a generic resource such as \"gpu\", \"gpu:4\" or \"gpu:a100:2\" (a count from 1 to "
            "1024), or \"\", got \"gpu 4\"");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"gpus_per_node", 4}, {"gres", "gpu:4"}})),
            "/slurm/gres: give one GPU request: gpus_per_node, gpus_per_task or gres, not several");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"gres", "gpu:a100:2"}, {"tasks_per_node", 4}})),
            "/slurm/gres: 2 GPUs for 4 tasks per node: ranks would share a GPU (dtbench runs one rank per GPU)");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"gpus_per_task", 1}, {"launcher", "mpirun"}})),
            "/slurm/gpus_per_task: needs launcher \"srun\" (under mpirun, Slurm binds the GPUs to mpirun's "
            "per-node daemon, not to each rank); use gpus_per_node or gres with mpirun");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"gpus_per_node", 2}, {"tasks_per_node", 4}})),
            "/slurm/gpus_per_node: 2 GPUs for 4 tasks per node: ranks would share a GPU (dtbench runs one rank per GPU)");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"launcher", "ssh"}})),
            "/slurm/launcher: expected one of \"srun\", \"mpirun\", got \"ssh\"");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"time", "1 hour"}})),
            "/slurm/time: expected a Slurm time limit such as \"30\", \"01:30:00\" or \"1-12:00:00\" (at most 24855-03:13:08), got \"1 hour\"");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"time", "00:01:00"}})),
            "/slurm/signal_seconds: 120 s is not shorter than the time limit 00:01:00 (60 s)");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"partition", "gpu; rm -rf /"}})),
            "/slurm/partition: expected a Slurm partition name or a comma-separated list of them (letters, digits, "
            "'_', '.', '+', '-') or \"\", got \"gpu; rm -rf /\"");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"partition", "gpu,,cpu"}})).rfind("/slurm/partition: expected", 0), 0u);
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"partition", "gpu,cpu"}, {"gres", "gpu"}})), "(no error)");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"account", "a,b"}})).rfind("/slurm/account: expected a Slurm name", 0), 0u);
  // A zero count is no request; a missing one is 1, as Slurm reads it ("gpu", "gpu:a100").
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"gres", "gpu:0"}})).rfind("/slurm/gres: expected a generic", 0), 0u);
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"gres", "gpu"}, {"tasks_per_node", 2}})),
            "/slurm/gres: 1 GPU for 2 tasks per node: ranks would share a GPU (dtbench runs one rank per GPU)");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"gres", "gpu:a100"}, {"tasks_per_node", 2}})),
            "/slurm/gres: 1 GPU for 2 tasks per node: ranks would share a GPU (dtbench runs one rank per GPU)");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"sbatch", {"exclusive"}}})),
            "/slurm/sbatch/0: expected an sbatch option such as \"--exclusive\" or \"--constraint=skylake\", got "
            "\"exclusive\"");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"sbatch", {"--comment=a\n#SBATCH --x"}}})),
            "/slurm/sbatch/0: line breaks and control characters are not allowed, got \"--comment=a\\n#SBATCH --x\"");
  // An extra line that sets what the script sets itself (sbatch takes the last line: a hunt's --nodes=3 ran configs
  // resolved for another rank count, --no-requeue stopped the requeue), by its long name, an abbreviation of it or
  // its letter; options the script leaves alone pass.
  for (const auto& [line, owned] : std::vector<std::pair<std::string, std::string>>{
           {"--nodes=3", "--nodes: give it as /slurm/nodes"}, {"--ntasks 5", "--ntasks: give it as /slurm/nodes and"},
           {"--tim=5", "--time: give it as /slurm/time"}, {"--no-requeue", "--no-requeue, which the script needs"},
           {"--array=0-3", "--array: give it as /slurm/array"}, {"--signal=USR2@10", "--signal: give it as"},
           {"-N3", "-N (--nodes): give it as /slurm/nodes"}, {"-t 10", "-t (--time): give it as /slurm/time"},
           {"-o x.out", "-o (--output), which the script needs"},
           // sbatch's alias of --ntasks-per-node ran 2 ranks under configs resolved for 1, and --wait blocked each
           // submission until its job ended (a hunt)
           {"--tasks-per-node=2", "--tasks-per-node: give it as /slurm/tasks_per_node"},
           {"--task=3", "--tasks-per-node: give it as /slurm/tasks_per_node"},
           {"--wait", "--wait: sbatch would wait for each job to end"}, {"-W", "-W (--wait): sbatch would wait"},
           // An entry's later options and bundled letters: sbatch reads them all ("--exclusive --nodes=2" ran 2
           // ranks, "-HN3" 3 nodes, "--hold --no-requeue" stopped the requeue; a hunt).
           {"--exclusive --nodes=2", "--nodes: give it as /slurm/nodes"},
           {"--hold --no-requeue", "--no-requeue, which the script needs"},
           {"--comment=x --time=2", "--time: give it as /slurm/time"}, {"-HN3", "-N (--nodes): give it as /slurm/nodes"},
           {"-Ht2", "-t (--time): give it as /slurm/time"},
           // sbatch would submit nothing: the campaign was written, then exit 1 (a hunt).
           {"--test-only", "--test-only: sbatch would only check the request"},
           {"-V", "-V (--version): sbatch would print its version"}, {"--usage", "--usage: sbatch would print"}})
    EXPECT_EQ(error_of(with(minimal(), "slurm", {{"sbatch", {"--exclusive", line}}})).rfind(
                  "/slurm/sbatch/1: \"" + line + "\" sets " + owned, 0),
              0u)
        << line;
  for (const char* line : {"--exclusive", "--hold", "--constraint=skylake", "--mem=4G", "--ntasks-per-core=1", "-C gpu",
                           "-Cgpu", "--comment=-N3", "-H --exclusive", "--mem 4G", "--comment=\"sweep -N 2\"",
                           "--comment -t",
                           "--gres=nvme:1", "--gres-flags=enforce-binding", "--time-min=5", "--tmp=10G", "--nodelist=n1",
                           "--wait-all-nodes=1"})
    EXPECT_EQ(error_of(with(minimal(), "slurm", {{"sbatch", {line}}})), "(no error)") << line;
  // --gres beside a GPU request (a second resource) is fine; beside /slurm/gres it would replace it.
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"gpus_per_node", 1}, {"sbatch", {"--gres=nvme:1"}}})), "(no error)");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"gres", "gpu:1"}, {"sbatch", {"--gres=nvme:1"}}})).rfind(
                "/slurm/sbatch/0: \"--gres=nvme:1\" sets --gres: give the GPUs as one of", 0),
            0u);
  // A GPU gres beside a GPU request: a second request the one-GPU-per-rank rule never sees (a review).
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"gpus_per_node", 4}, {"sbatch", {"--gres=gpu:1"}}})).rfind(
                "/slurm/sbatch/0: \"--gres=gpu:1\" sets --gres: give the GPUs as one of", 0),
            0u);
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"setup", {"module load x", 3}}})), "/slurm/setup/1: expected a string, got 3");
  EXPECT_EQ(error_of(with(minimal(), "repeats", 0)), "/repeats: expected an integer in [1, 1000], got 0");
  EXPECT_EQ(error_of(with(minimal(), "program", Json::array())),
            "/program: expected at least the program to run, e.g. [\"/usr/local/bin/dtbench\", \"train\"]");
  EXPECT_EQ(error_of(with(minimal(), "local", {{"mpirun_arg", Json::array()}})),
            "/local/mpirun_arg: unknown key (did you mean \"mpirun_args\"?); valid keys here: max_jobs, mpirun_args");
  EXPECT_EQ(error_of(with(minimal(), "local", {{"max_jobs", 0}})),
            "/local/max_jobs: expected an integer in [1, 1024], got 0");
  EXPECT_EQ(error_of(with(minimal(), "local", {{"max_jobs", 1.5}})),
            "/local/max_jobs: expected an integer in [1, 1024], got 1.5");
}

TEST(Spec, AxisErrors) {
  EXPECT_EQ(error_of(with(minimal(), "axes", {{"seed", {1, 2}}})),
            "/axes/seed: seeds come from /repeats (base seed, base seed + 1, ...), not from an axis");
  EXPECT_EQ(error_of(with(minimal(), "axes", {{"output.dir", {"/etc"}}})),
            "/axes/output.dir: set by dtbench sweep (each run is named after its point; records go to --out/runs)");
  EXPECT_EQ(error_of(with(minimal(), "axes", {{"optimizer/lr", {1}}})),
            "/axes/optimizer~1lr: expected a key path such as \"optimizer.lr\" or \"slurm.nodes\" (words joined by '.')");
  EXPECT_EQ(error_of(with(minimal(), "axes", {{"optimizer.lr", Json::array()}})),
            "/axes/optimizer.lr: expected a non-empty list of values, got []");
  EXPECT_EQ(error_of(with(minimal(), "axes", {{"slurm.nodes", {1, -2}}})),
            "/axes/slurm.nodes/1: expected an integer in [1, 100000], got -2");
  EXPECT_EQ(error_of(with(minimal(), "axes", {{"slurm.array", {true}}})),
            "/axes/slurm.array: /slurm/array applies to the whole sweep and cannot vary");
  Json zip = with(minimal(), "axes", {{"batch.global", {64, 128}}});
  zip["zip"] = {{{"optimizer.lr", {0.1, 0.2}}, {"batch.global", {64, 128}}}};
  EXPECT_EQ(error_of(zip), "/zip/0/batch.global: \"batch.global\" varies on another axis already");
  EXPECT_EQ(error_of(with(minimal(), "zip", {{{"batch.global", {64, 128}}, {"optimizer.lr", {0.1}}}})),
            "/zip/0/optimizer.lr: has 1 values but \"batch.global\" has 2; zipped lists must be equally long");
  EXPECT_EQ(error_of(with(minimal(), "base", {{"output", {{"dir", "../../elsewhere"}}}})),
            "/base/output/dir: set by dtbench sweep (each run is named after its point; records go to --out/runs); remove it");
  EXPECT_EQ(error_of(with(minimal(), "base", {{"name", "x"}})),
            "/base/name: set by dtbench sweep (each run is named after its point; records go to --out/runs); remove it");
}

TEST(Spec, RunConfigErrorsPointIntoTheSpec) {
  // A bad axis value: the message names the axis entry and the point, with the config's own text.
  Json doc = with(minimal(), "axes", {{"optimizer.momentum", {0.9, 1.5}}});
  EXPECT_EQ(error_of(doc), "/axes/optimizer.momentum/1: expected a number in [0, 1), got 1.5 (point p1: "
                           "optimizer.momentum=1.5, 1 ranks)");
  // A bad base key.
  EXPECT_EQ(error_of(with(minimal(), "base", {{"optimizr", Json::object()}}))
                .rfind("/base/optimizr: unknown key (did you mean \"optimizer\"?); valid keys here: name, seed", 0),
            0u);
  // A rule that only fails on some points: the global batch against the rank count of slurm.nodes.
  Json div = minimal();
  div["base"]["batch"] = {{"global", 100}};
  div["axes"] = {{"slurm.nodes", {1, 2, 3}}};
  EXPECT_EQ(error_of(div), "/base/batch/global: 100 is not divisible by the rank count 3 (point p2: slurm.nodes=3, 3 ranks)");
  // A key the base gives that the axis's optimizer does not have.
  Json variant = minimal();
  variant["base"]["optimizer"] = {{"nesterov", true}};
  variant["axes"] = {{"optimizer.name", {"sgd", "adam"}}};
  std::string e = error_of(variant);
  EXPECT_EQ(e.substr(0, 40), "/base/optimizer/nesterov: unknown key; v") << e;
  EXPECT_NE(e.find("(point p1: optimizer.name=adam, 1 ranks)"), std::string::npos) << e;
  // Found by fuzz_sweep_spec: a base key holding a NUL cut the config's message at the NUL (what() is a C
  // string), and looking for the pointer's end in what was left threw std::out_of_range (exit 1).
  Json nul = minimal();
  nul["base"][std::string("batch\0x", 7)] = 1;
  EXPECT_EQ(error_of(nul).rfind("/base/batch\\u0000x: unknown key", 0), 0u) << error_of(nul);
}

TEST(Spec, TimeLimits) {
  EXPECT_EQ(slurm_time_seconds("30"), 30 * 60);
  EXPECT_EQ(slurm_time_seconds("30:15"), 30 * 60 + 15);
  EXPECT_EQ(slurm_time_seconds("01:30:00"), 5400);
  EXPECT_EQ(slurm_time_seconds("2-0"), 2 * 86400);
  EXPECT_EQ(slurm_time_seconds("1-12:30"), 86400 + 12 * 3600 + 30 * 60);
  EXPECT_EQ(slurm_time_seconds("1-00:00:05"), 86405);
  EXPECT_EQ(slurm_time_seconds("1h"), -1);
  EXPECT_EQ(slurm_time_seconds(""), -1);
  EXPECT_EQ(slurm_time_seconds("1:2:3:4"), -1);
  // A field too long for an int64_t was an uncaught std::out_of_range (exit 1); at most 9 digits a field.
  EXPECT_EQ(slurm_time_seconds("99999999999999999999"), -1);
  EXPECT_EQ(slurm_time_seconds("1234567890"), -1);
  // Slurm's own bound: its parser sums the fields as seconds in an int and rounds up to minutes (parse_time.c), so a
  // longer limit wrapped there (noticed in stop 58: "999999999-99:99:99" was accepted).
  EXPECT_EQ(slurm_time_seconds("999999999-99:99:99"), -1);
  EXPECT_EQ(slurm_time_seconds("24855-03:13:08"), 2147483647LL - 59);
  EXPECT_EQ(slurm_time_seconds("24855-03:13:09"), -1);
  EXPECT_EQ(slurm_time_seconds("35791393"), 35791393LL * 60);
  EXPECT_EQ(slurm_time_seconds("35791394"), -1);
  EXPECT_EQ(slurm_time_seconds("596523:13:08"), 2147483588);
  EXPECT_EQ(slurm_time_seconds("596523:13:09"), -1);
}

TEST(Spec, NumbersBeyondTheirRangeNameTheKey) {
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"time", "99999999999999999999"}})),
            "/slurm/time: expected a Slurm time limit such as \"30\", \"01:30:00\" or \"1-12:00:00\" (at most 24855-03:13:08), got "
            "\"99999999999999999999\"");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"gres", "gpu:99999999999999999999"}})),
            "/slurm/gres: expected a generic resource such as \"gpu\", \"gpu:4\" or \"gpu:a100:2\" (a count from 1 to "
            "1024), or \"\", got \"gpu:99999999999999999999\"");
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"gres", "gpu:1025"}})).rfind("/slurm/gres: expected a generic", 0), 0u);
  EXPECT_EQ(error_of(with(minimal(), "slurm", {{"nodes", 1e300}})),
            "/slurm/nodes: expected an integer in [1, 100000], got 1e+300");
  EXPECT_EQ(error_of(with(minimal(), "repeats", dtbench::parse_json("99999999999999999999", "x"))),
            "/repeats: expected an integer in [1, 1000], got 1e+20");
  EXPECT_EQ(error_of(with(minimal(), "axes", {{"slurm.time", {"10", "1e999"}}})),
            "/axes/slurm.time/1: expected a Slurm time limit such as \"30\", \"01:30:00\" or \"1-12:00:00\" (at most "
            "24855-03:13:08), got \"1e999\"");
  EXPECT_EQ(error_of(with(minimal(), "axes", {{"optimizer.lr", {0.1, 1e300}}, {"duration.steps", {10, 1e300}}})),
            "/axes/duration.steps/1: expected an integer in [0, 1000000000000], got 1e+300 (point p1: optimizer.lr=0.1, "
            "duration.steps=1e+300, 1 ranks)");
}

TEST(Expand, RunsAreCountedAndBoundedBeforeAnyPoint) {
  // 64 axes of 2 values are 2^64 points, which a size_t product wrapped to 0: an empty campaign.
  Json axes = Json::object();
  for (int i = 0; i < 64; ++i) axes["model.k" + std::to_string(i)] = {1, 2};
  std::string grid = "2";
  for (int i = 1; i < 64; ++i) grid += " x 2";
  EXPECT_EQ(error_of(with(minimal(), "axes", axes)),
            "/axes: " + grid + " points x 1 repeats is more than 10000 runs (Slurm's default MaxJobCount)");
  // The limit counts runs: 1000 points x 1000 repeats is a million runs, though 1000 points alone are few.
  Json many = with(minimal(), "axes", {{"optimizer.lr", Json::array()}});
  for (int i = 1; i <= 1000; ++i) many["axes"]["optimizer.lr"].push_back(i * 1e-3);
  many["repeats"] = 1000;
  EXPECT_EQ(error_of(many), "/axes: 1000 points x 1000 repeats is more than 10000 runs (Slurm's default MaxJobCount)");
  many["repeats"] = 10;
  EXPECT_EQ(expand(parse_spec(many, "."), "/tmp/r").size(), 1000u);
  many["repeats"] = 11;
  EXPECT_EQ(error_of(many), "/axes: 1000 points x 11 repeats is more than 10000 runs (Slurm's default MaxJobCount)");
  Json zipped = with(minimal(), "zip", Json::array({{{"optimizer.lr", many["axes"]["optimizer.lr"]}}}));
  zipped["repeats"] = 11;
  EXPECT_EQ(error_of(zipped), "/zip: 1000 points x 11 repeats is more than 10000 runs (Slurm's default MaxJobCount)");
}

TEST(Expand, ABaseSeedOutOfRangeIsNamed) {
  // The seed was read as an int64_t before the config checked it: 2^64 - 1 became seeds -1, 0, 1, ...
  Json doc = minimal();
  doc["base"]["seed"] = dtbench::parse_json("18446744073709551615", "x");
  EXPECT_EQ(error_of(doc), "/base/seed: expected an integer in [0, 9007199254740991], got 18446744073709551615 "
                           "(point p0: the base config, 1 ranks)");
  doc["base"]["seed"] = 1e300;
  EXPECT_EQ(error_of(doc), "/base/seed: expected an integer in [0, 9007199254740991], got 1e+300 "
                           "(point p0: the base config, 1 ranks)");
  doc["base"]["seed"] = 9007199254740991.0;  // the last seed: a second repeat would pass it, and /repeats says so
  doc["repeats"] = 2;
  EXPECT_EQ(error_of(doc), "/repeats: 2 repeats count the seeds up from /base/seed 9007199254740991 to "
                           "9007199254740991 + 1, above the largest seed, 2^53 - 1 = 9007199254740991: use a smaller "
                           "/base/seed");
}

TEST(Expand, CartesianProductZipAndRepeats) {
  Json doc = minimal();
  doc["base"]["seed"] = 7;
  doc["axes"] = {{"reducer.name", {"ring", "tree", "mpi"}}, {"slurm.nodes", {1, 2}}};
  doc["zip"] = {{{"batch.global", {64, 128}}, {"optimizer.lr", {0.1, 0.2}}}};
  doc["repeats"] = 2;
  Spec s = parse_spec(doc, ".");
  auto points = expand(s, "/abs/out/runs");
  ASSERT_EQ(points.size(), 3u * 2u * 2u);
  // First axis slowest, the zip group fastest.
  EXPECT_EQ(points[0].label, "p00-ring-nodes1-global64-lr0.1");
  EXPECT_EQ(points[1].label, "p01-ring-nodes1-global128-lr0.2");
  EXPECT_EQ(points[2].label, "p02-ring-nodes2-global64-lr0.1");
  EXPECT_EQ(points[11].label, "p11-mpi-nodes2-global128-lr0.2");
  std::set<std::string> names;
  for (const auto& p : points) {
    ASSERT_EQ(p.runs.size(), 2u);
    EXPECT_EQ(p.ranks, p.slurm["nodes"].get<int64_t>());
    for (const auto& r : p.runs) {
      names.insert(r.name);
      EXPECT_EQ(r.config["name"], r.name);
      EXPECT_EQ(r.config["seed"], r.seed);
      EXPECT_EQ(r.config["output"]["dir"], "/abs/out/runs");
      EXPECT_EQ(r.config["output"]["record"], r.name + ".json");
      // Zipped values move together.
      EXPECT_DOUBLE_EQ(r.config["optimizer"]["lr"].get<double>(), r.config["batch"]["global"].get<double>() / 640.0);
      // The config is what `dtbench config` resolves.
      EXPECT_EQ(r.config, dtbench::config::resolve(r.config, static_cast<int>(p.ranks)));
    }
    EXPECT_EQ(p.runs[0].seed, 7);
    EXPECT_EQ(p.runs[1].seed, 8);
  }
  EXPECT_EQ(names.size(), 24u);
  EXPECT_EQ(points[5].runs[1].name, "p05-tree-nodes1-global128-lr0.2-s8");
  EXPECT_EQ(points[5].runs[1].config["reducer"]["name"], "tree");
  EXPECT_EQ(describe(points[5]), "reducer.name=tree, slurm.nodes=1, batch.global=128, optimizer.lr=0.2");
}

TEST(Expand, NoAxesIsOnePoint) {
  auto points = expand(parse_spec(minimal(), "."), "/o/runs");
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].runs[0].name, "p0-s1");
  EXPECT_EQ(describe(points[0]), "the base config");
}

TEST(Expand, ObjectValuesReplaceASectionAndNameTheLabel) {
  Json doc = minimal();
  doc["axes"] = {{"optimizer", {{{"name", "lars"}, {"lr", 2.0}}, {{"name", "lamb"}, {"lr", 0.01}}}}};
  auto points = expand(parse_spec(doc, "."), "/o/runs");
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].label, "p0-lars");
  EXPECT_EQ(points[1].runs[0].config["optimizer"]["name"], "lamb");
  EXPECT_DOUBLE_EQ(points[1].runs[0].config["optimizer"]["lr"].get<double>(), 0.01);
  EXPECT_DOUBLE_EQ(points[1].runs[0].config["optimizer"]["beta1"].get<double>(), 0.9);  // lamb's default
}

TEST(Expand, HostileValuesGiveFileSafeNames) {
  Json doc = minimal();
  doc["name"] = "x$(touch pwned)'\"; `y`";
  doc["axes"] = {{"data.path", {"../../../etc", "$(touch pwned)", "a b/c"}}};
  auto points = expand(parse_spec(doc, "."), "/o/runs");
  for (const auto& p : points)
    for (const auto& r : p.runs) {
      EXPECT_EQ(r.name.find('/'), std::string::npos);
      EXPECT_EQ(r.name.find('$'), std::string::npos);
      EXPECT_EQ(r.name.find(' '), std::string::npos);
      EXPECT_EQ(r.name[0], 'p');
    }
  EXPECT_EQ(points[0].runs[0].config["data"]["path"], "../../../etc");  // the value itself is kept exactly
  EXPECT_EQ(points[1].label, "p1-_touch_pwned");
}

TEST(Expand, BaseFromAFileRelativeToTheSpec) {
  fs::path dir = fs::temp_directory_path() / ("dtbench-spec-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "base.json") << R"({"duration": {"steps": 5}, "reducer": {"name": "tree"}})";
  std::ofstream(dir / "spec.json") << R"({"name": "f", "base": "base.json", "axes": {"slurm.nodes": [1, 2]}})";
  Spec s = load_spec(dir / "spec.json");
  EXPECT_EQ(s.source["base"]["reducer"]["name"], "tree");  // inlined for the campaign's spec.json
  auto points = expand(s, dir / "runs");
  EXPECT_EQ(points[1].runs[0].config["duration"]["steps"], 5);
  std::ofstream(dir / "bad.json") << "{\"name\": \"f\",\n  \"axes\": [}";
  try {
    load_spec(dir / "bad.json");
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "bad.json").string() + ":2:12: invalid JSON (byte 25)");
  }
  std::ofstream(dir / "bad2.json") << R"({"name": "f", "slurm": {"nodes": "two"}})";
  try {
    load_spec(dir / "bad2.json");
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "bad2.json").string() + ": /slurm/nodes: expected an integer in [1, 100000], got \"two\"");
  }
  fs::remove_all(dir);
}
