// Where a run writes: its record <output.dir>/<name>.json, the checkpoint folder <name>.ckpt/ and the
// MLLOG file <name>.mllog beside it. The name is derived from the config when it is not given.
#pragma once

#include <filesystem>
#include <string>

#include "core/json.hpp"

namespace dtbench {

class World;

// "<arch>-<optimizer>-<reducer>-k<K>-b<global batch>-s<seed>".
std::string derived_run_name(const Json& cfg, int ranks, long global_batch);

struct RunPaths {
  std::filesystem::path record, checkpoint, mllog;
};

// The paths of the resolved config `cfg` (whose /name is set). Rank 0 checks that the record may be
// written (an existing record refuses the run unless `resume` finds this run's checkpoint); every rank
// learns the outcome (World::agree_on_error).
RunPaths agree_on_run_paths(const Json& cfg, bool resume, const World& world);

}  // namespace dtbench
