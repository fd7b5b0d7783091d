// The run record (core/run_record.hpp) at the end of a run, or when it is preempted: every rank's timing
// means are gathered to rank 0, which writes the record with the run's facts, the curve, time to accuracy
// and the extra sections (per-rank timing, bytes per step, buckets, GFLOP/s, the exposed-communication
// split, preemptions, asynchronous staleness, scaling efficiency against --baseline).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "core/json.hpp"
#include "core/run_record.hpp"
#include "workloads/train/run_state.hpp"
#include "workloads/train/world.hpp"

namespace dtbench {

class DataParallel;
class TrainModel;

// --baseline: a 1-rank record of the same workload, read before the run starts (scaling efficiency).
struct Baseline {
  std::string path;
  double images_per_second_per_rank = 0;
};
// BadInput "<path>: not a dtbench run record (--baseline): <why>" when it is not one, and when it is not a done run
// of the same workload (model, data and backend as `cfg`).
Baseline read_baseline(const std::string& path, const Json& cfg);

// What the record says about the run besides its state; fixed once the run is set up.
struct RunFacts {
  Json config;  // resolved
  int ranks = 1;
  long global_batch = 0, per_rank = 0;
  int64_t steps_per_epoch = 1, total_steps = 0;
  std::filesystem::path record;
  std::filesystem::path weights;     // /output/save_weights: the final weights beside the record; else empty
  std::optional<Baseline> baseline;  // --baseline
  bool resume = false;   // --resume: a preempted record at the path is replaced by its continuation
  std::string init_from;  // --init-from: the checkpoint folder the run started from (extra.init_from)
  int64_t stop_at = 0;    // --stop-at (extra.stop_at)
  // Tensor model parallelism: extra.model_parallel (ModelParallel::record), and the whole model's parameter count
  // (the weights file's); null and 0 without it.
  Json model_parallel = nullptr;
  // Pipeline stages: extra.pipeline (Pipeline::record).
  Json pipeline = nullptr;
  size_t whole_parameters = 0;
  double peak_lr = 0;  // the schedule's peak, /optimizer/lr scaled by /lr_scaling (extra.peak_lr; MLLOG's base lr)
  int64_t warmup_steps = 0;  // the steps the schedule warms up for (extra.warmup_steps; MLLOG's warmup epochs x spe)
  std::string weights_crc32;  // the weights file's CRC-32 (extra.weights.crc32), as 8 hex digits; rank 0's
  size_t weights_floats = 0;  // the floats the weights file holds (extra.weights.floats); rank 0's
  int64_t test_set_samples = 0;  // the whole test set's images (extra.test_set_samples), before /eval/test_samples
};

// Collective: every rank calls it; rank 0 writes. `parallel` is null for asynchronous SGD, whose
// server statistics come in `asynchronous`.
void write_run_record(const World& world, const RunFacts& facts, const TrainState& st, RunStatus status,
                      const std::string& detail, TrainModel& model, const DataParallel* parallel,
                      const Json& asynchronous, double wall_seconds, const std::string& started_utc);

}  // namespace dtbench
