// A claim of the seeds as dtbench reproduces it: results/claims/<id>/claim.json and the experiment specs beside it.
//
//   {
//     "id": "a",                                  the folder's name
//     "title": "K workers with batch b equal one worker with batch K*b",
//     "seed": {"file": "000_b3e461aee51265b0.txt", "quote": "... producing identical numerical result ..."},
//     "setup": "prose: model, data, ranks, what varies",
//     "criterion": {"kind": "equivalence", "text": "prose, fixed before the runs", ...the kind's parameters},
//     "experiments": {"quick": [EXPERIMENT, ...], "full": [EXPERIMENT, ...]}
//   }
//
// An experiment is {"name": "mlp", "sweep": "mlp-quick.json"} (a sweep spec in the claim's folder, run by the sweep
// machinery) or {"name": "bytes", "allreduce": {"ranks": [2, 3], "transport": "thread"|"mpi", "args": [...]}}
// (`dtbench allreduce ARGS --json` at each rank count) or {"name": "inputs", "published": ["networks.json"]} (files of
// results/published copied into the report folder when the claim runs, so its report reads the figures it was
// judged on even after the published files change). Names are folder names under the report folder.
// Validation is strict: unknown keys, wrong types and a spec that does not load are BadInput naming the file and
// the JSON pointer.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace dtbench::reproduce {

struct Experiment {
  std::string name;
  std::string kind;                // "sweep", "allreduce" or "published"
  std::filesystem::path spec;      // sweep: the spec file
  std::vector<int> ranks;          // allreduce: the rank counts
  std::string transport;           // allreduce: "thread" or "mpi"
  std::vector<std::string> args;   // allreduce: `dtbench allreduce` arguments (no --json, --ranks, --transport)
  std::vector<std::string> files;  // published: file names in results/published
};

struct Claim {
  std::string id;
  std::string title;
  std::string seed_file;
  std::string quote;
  std::string setup;
  Json criterion;  // {"kind", "text", parameters}; the kind's entry checks the parameters
  std::map<std::string, std::vector<Experiment>> scales;  // "quick", "full"
  std::filesystem::path dir;  // the folder holding claim.json
};

inline const std::vector<std::string>& scale_names() {
  static const std::vector<std::string> names = {"quick", "full"};
  return names;
}

// Reads and validates <dir>/claim.json, its criterion's parameters and every sweep spec it names; with `to_run`, also
// that its allreduce experiments' buffers fit this machine (a report regenerated from records runs nothing).
Claim load_claim(const std::filesystem::path& dir, bool to_run = true);

// The claim ids under `root` (folders holding a claim.json), sorted.
std::vector<std::string> claim_ids(const std::filesystem::path& root);

}  // namespace dtbench::reproduce
