// Experiment specs: a base run config, sweep axes, repeats and the Slurm resources of every point.
//
//   {
//     "name": "reducers-x-nodes",            campaign name (any text; job names carry it literally)
//     "description": "...",                  optional
//     "base": { run config } | "base.json",  a run config as `dtbench config` takes it, or its file
//                                            (relative to the spec's folder)
//     "axes": {"reducer.name": ["ring", "tree"], "slurm.nodes": [1, 2]},      cartesian product
//     "zip": [{"batch.global": [128, 256], "optimizer.lr": [0.1, 0.2]}],    values that move together
//     "repeats": 3,                          seeds base_seed, base_seed + 1, ... (base_seed = /base/seed)
//     "slurm": {"nodes": 2, ...},           resources and launch of every point (slurm/README.md)
//     "local": {"mpirun_args": ["--oversubscribe"], "max_jobs": 1},         for `dtbench sweep --local`
//                                            (max_jobs caps --jobs: runs whose outcome depends on the machine's
//                                            pace, such as asynchronous SGD's staleness, never share it)
//     "program": ["/path/to/dtbench", "train"]                               default: this dtbench binary
//   }
//
// Axis keys are dot paths as `--set` takes them: into the run config ("optimizer.lr") or, with the
// prefix "slurm.", into the Slurm section ("slurm.nodes"). A value may be any JSON value; an object
// replaces the whole section (e.g. {"name": "lars", "lr": 9}). Points are the cartesian product of
// the axes and the zip groups, the first axis varying slowest. Validation is as strict as run
// configs' and its messages name the spec key as a JSON pointer ("/slurm/nodes: expected ...").
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace dtbench::slurm {

// One dimension of the grid: a cartesian axis has one key, a zip group several keys whose value
// lists have the same length. `pointer` is where the axis sits in the spec ("/axes" or "/zip/0").
struct Axis {
  std::string pointer;
  std::vector<std::string> keys;
  std::vector<std::vector<Json>> values;  // values[k][i]: the i-th value of keys[k]
  size_t size() const { return values.empty() ? 0 : values[0].size(); }
};

struct Spec {
  std::string name;
  std::string description;
  Json base = Json::object();  // the run config in user form (not resolved)
  std::vector<Axis> axes;
  int64_t repeats = 1;
  Json slurm;                  // resolved Slurm section (every default filled in)
  Json local;                  // resolved local section
  std::vector<std::string> program;  // empty = this dtbench binary followed by "train"
  Json source;                 // the spec as given, with a base file inlined
  std::filesystem::path base_file;  // the base config's file, when /base names one (input the sweep must not replace)
};

// Validates and resolves a spec document. `spec_dir` resolves a base given as a file name.
// Throws BadInput "/pointer: message".
Spec parse_spec(const Json& doc, const std::filesystem::path& spec_dir);

// A spec's /base: the run config object given, or the one in the file it names (relative to `spec_dir`).
// Throws BadInput "/base: ..." (sweep specs and dtbench pbt's specs share it).
Json load_base(const Json& base, const std::filesystem::path& spec_dir);

// Reads and parses a spec file; messages are prefixed with the file name (and line and column for
// invalid JSON), as for run configs.
Spec load_spec(const std::filesystem::path& path);

// A "slurm" section (nullptr: absent) with every default filled in and every key checked, and a "local"
// section ({"mpirun_args": [...]}, default ["--oversubscribe"]; "max_jobs" only where given). Throws BadInput naming `ptr`/KEY. Sweep specs
// and dtbench pbt's specs share both.
Json resolve_slurm(const Json* user, const std::string& ptr);
Json resolve_local(const Json* user, const std::string& ptr);

// The Slurm section with every default (what `dtbench sweep --explain` would print).
Json slurm_defaults();

// Validates one Slurm section value: used for axis values on "slurm.KEY". Throws BadInput with
// `pointer`.
Json check_slurm_value(const std::string& key, const Json& value, const std::string& pointer);

// Cross-field rules of a resolved Slurm section (signal before the time limit). Throws BadInput.
void check_slurm_section(const Json& slurm, const std::string& pointer);
// The counts among `args`, a launcher's arguments (/slurm/launcher_args for `launcher` srun or mpirun,
// /local/mpirun_args for mpirun on this host, `one_host`), against the nodes x tasks_per_node the config was resolved
// for: a rank count (mpirun -np/-n/--np/-c N, srun -n N, -nN, --ntasks[=]N) must be `ranks`; a count of ranks per node
// (mpirun --npernode N or -N N, --map-by ppr:N:node, --ppr N:node; srun --ntasks-per-node N) must be `tasks_per_node` under Slurm and at
// least `ranks` on one host (every rank runs here). Checked per point (an axis may set nodes, tasks or the arguments)
// for the launcher it runs under, and on a pbt spec. On one host, no argument may place Open MPI's session files
// (sets_session_folder: dtbench does for the runs it starts). Throws BadInput naming `pointer`/index.
void check_launcher_args(const Json& args, const std::string& launcher, int64_t ranks, int64_t tasks_per_node,
                         bool one_host, const std::string& pointer);

// srun's CPUs per task in the launcher's arguments (-c N, -cN, --cpus-per-task N or =N) must be /slurm/cpus_per_task:
// the launch line passes that count first and a later one won, the run getting fewer CPUs than its spec and record
// say (found by a hunt). Throws BadInput naming `pointer`/index.
void check_launcher_cpus(const Json& slurm, const std::string& pointer);

// Whether a /slurm/gres value asks for GPUs ("gpu", "gpu:4", "gpu:a100:2").
bool gres_is_gpu(const std::string& gres);

// The longest time limit Slurm reads right: INT_MAX - 59 seconds, 24855-03:13:08 (it rounds up to minutes in an int).
inline constexpr int64_t kSlurmMaxTimeSeconds = 2147483647LL - 59;

// Seconds of a Slurm time limit ("MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS");
// -1 when `text` is not one of these forms or is longer than kSlurmMaxTimeSeconds.
int64_t slurm_time_seconds(const std::string& text);

}  // namespace dtbench::slurm
