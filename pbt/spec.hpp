// Population-based training specs (Jaderberg et al. 2017, "Population Based Training of Neural Networks",
// arXiv 1711.09846): `dtbench pbt SPEC --out DIR`.
//
//   {
//     "name": "fmnist-pbt",                    campaign name
//     "mode": "pbt",                           or "random_search": the same members from the same priors,
//                                              never exploited or explored (the baseline with equal compute)
//     "base": { run config } | "base.json",    as `dtbench sweep` takes it; /duration/steps is every member's
//                                              length (steps, not epochs: ready intervals count steps)
//     "population": 8,                         members, >= 2
//     "ready_steps": 100,                      a member is ready (evaluated, maybe exploited) every this many steps
//     "select_on": "validation",               the accuracy that ranks members: "validation" (the default when
//                                              /base/data/validation_size > 0: images held out of the training
//                                              set) or "test" (the default otherwise)
//     "seed": 1,                               of the priors, the selection and the perturbations; each member
//                                              trains with /base/seed + its index
//     "exploit": {"truncation": 0.25},         the bottom fraction copies a random member of the top fraction
//     "explore": {"perturb": [0.8, 1.2],       each copied hyperparameter times one of these, drawn uniformly,
//                 "resample_probability": 0},  or with this probability drawn afresh from its prior
//     "hyperparameters": {                     dot paths as --set takes them, each with its prior
//       "optimizer.lr": {"prior": "log_uniform", "min": 0.001, "max": 1},
//       "optimizer.momentum": {"prior": "uniform", "min": 0, "max": 0.99}
//     },
//     "local": {"concurrency": 2,              members trained at once here, each a `dtbench train` process
//               "mpirun_args": [...]},         (mpirun -np K ARGS... when a member has K > 1 ranks; default
//                                              ["--oversubscribe"])
//     "slurm": {"nodes": 1, "tasks_per_node": 2, "time": "00:30:00", ...},
//                                              a member's resources and launch, as a sweep's /slurm
//                                              (slurm/README.md): with `dtbench pbt --submit` each member
//                                              interval is an sbatch job with the sweeps' requeue and resume;
//                                              a member has K = nodes x tasks_per_node ranks in both modes
//     "program": ["/path/to/dtbench", "train"] default: this dtbench binary
//   }
//
// Hyperparameters may be the optimizer's (not its name), the schedule's and the learning-rate scaling's: what
// a member can change while continuing another's checkpoint (dtbench train --init-from). Batch size is not
// explored: a checkpoint continues its data stream at its batch. A value of an integer key (e.g.
// schedule.warmup_steps) is rounded. Every prior bound is checked as a value of its key in the base config.
// Errors name the spec key as a JSON pointer and exit 2.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace dtbench::pbt {

struct Prior {
  std::string key;          // dot path into the run config, e.g. "optimizer.lr"
  std::string kind;         // "uniform" | "log_uniform"
  double min = 0, max = 0;  // min < max; log_uniform: min > 0
  bool integer = false;     // the key holds an integer in the run config: values are rounded
};

struct Spec {
  std::string name;
  std::string mode = "pbt";  // "pbt" | "random_search"
  std::string select_on;     // "validation" | "test"
  Json base = Json::object();
  int population = 0;
  int64_t ready_steps = 0;
  int64_t total_steps = 0;   // /base/duration/steps
  int64_t base_seed = 0;     // /base/seed, resolved: member m trains with base_seed + m
  uint64_t seed = 1;
  double truncation = 0.25;
  std::vector<double> perturb{0.8, 1.2};
  double resample_probability = 0.0;
  std::vector<Prior> hyperparameters;
  int concurrency = 1;
  Json local;                // resolved /local without concurrency: {"mpirun_args": [...]}
  Json slurm;                // resolved /slurm (every default filled in)
  int64_t ranks = 1;         // of every member: /slurm/nodes x /slurm/tasks_per_node
  std::vector<std::string> program;  // empty = this dtbench binary followed by "train"
  Json source;                       // the spec as given, with a base file inlined
  std::filesystem::path base_file;   // the base config's file, when /base names one (input pbt must not replace)

  int64_t intervals() const { return (total_steps + ready_steps - 1) / ready_steps; }
  // Members exploited per ready point: round(truncation x population), at least 1, at most half.
  int cut() const;
};

// Validates a spec document; `spec_dir` resolves a base given as a file name. BadInput "/pointer: message".
Spec parse_spec(const Json& doc, const std::filesystem::path& spec_dir);
Spec load_spec(const std::filesystem::path& path);

// The run config of one member's interval: the base with the member's hyperparameters, its seed, its name,
// records under `runs_dir` and a checkpoint kept at the end. /duration stays the whole campaign's length, so
// that schedules and warmups span it; the interval's run stops at its ready point (dtbench train --stop-at).
Json member_config(const Spec& spec, const Json& hyperparameters, int member, const std::string& run,
                   const std::filesystem::path& runs_dir);

}  // namespace dtbench::pbt
