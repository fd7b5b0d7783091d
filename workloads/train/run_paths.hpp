// Where a run writes: its record <output.dir>/<name>.json, the checkpoint folder <name>.ckpt/, the
// MLLOG file <name>.mllog and (/output/save_weights) the final weights <name>.weights beside it (the name
// is derived from the config when it is not given), --save-weights and --trace. Nothing is created until every input has been validated; then check_outputs proves
// each output writable, creating the record's folder, before the run starts.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/json.hpp"

namespace dtbench {

// "<arch>-<optimizer>-<reducer>-k<K>-b<global batch>-s<seed>".
std::string derived_run_name(const Json& cfg, int ranks, long global_batch);

struct RunPaths {
  std::filesystem::path record, checkpoint, mllog;
  std::filesystem::path weights;  // empty unless /output/save_weights
};

// The paths of the resolved config `cfg` (whose /name is set); writes nothing.
RunPaths run_paths(const Json& cfg);

// The run's own files are written by name: `path`, when it exists, must be of `kind` (a regular file, or the
// checkpoint's folder), not a symbolic link; one that is a FIFO would block the run for good, a folder or a device
// fail it at the end. BadInput naming /output.
void check_output_kind(const std::filesystem::path& path, std::filesystem::file_type kind);

// Checks that the record may be written (an existing record refuses the run unless `resuming` continues or
// replaces it), creating its folder, that the weights file (if any) does not exist yet (unless `replace_weights`, what
// weights_left_over said), that none of the run's files is
// there as another kind of file (a FIFO, a folder), that --save-weights and --trace (if given) name files in
// existing, writable folders, and that no two outputs, nor an output and one of `inputs` ({what, path}: the
// config file, --baseline, --init-from), are one file. BadInput naming the path. Rank 0 calls it
// (World::checked_on_root).
void check_outputs(const RunPaths& paths, bool resuming, bool replace_weights, const std::string& save_weights,
                   const std::string& trace, const std::vector<std::pair<std::string, std::string>>& inputs);

// Whether `record` is there and says "preempted": with --resume, the run's next attempt replaces it (a checkpointed
// run continues it; one without a checkpoint, as an asynchronous run, starts again from step 0).
bool preempted_record(const std::filesystem::path& record);

// Whether /output/save_weights' file is there without a finished record beside it (none, or a preempted one) and
// --resume was given: an attempt that failed between writing the weights and its record left it, and the rerun
// replaces it (any other weights file is never replaced: exit 2).
bool weights_left_over(const RunPaths& paths, bool resume);

}  // namespace dtbench
