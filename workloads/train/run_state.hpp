// The run-level state a checkpoint carries besides each rank's buffers: where the run is, the summed
// timings, the evaluation curve so far and the small state of the estimators. Written to the checkpoint
// header with named keys (header.json "state").
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/json.hpp"
#include "core/run_record.hpp"

namespace dtbench {

struct TrainState {
  int64_t step = 0;            // optimizer steps done
  double elapsed = 0;          // wall seconds of the run so far (across resumes)
  double inherited_elapsed = 0;  // of which taken over from the checkpoint of --init-from (another run's time)
  StepTiming sum;              // summed seconds per phase over `timed_steps`
  int64_t timed_steps = 0;
  // The same without each attempt's first step (the first after the start or a resume), whose time holds
  // one-off set-up: oneDNN's first execution, cuDNN's plans, first touches of memory. A short run's means
  // are dominated by it (BENCHMARKS.md, "The GPU backend's second run on a device").
  double steady_total = 0;
  int64_t steady_steps = 0;
  bool attempt_stepped = false;  // this attempt has timed a step (not checkpointed: every attempt starts false)
  double train_loss_sum = 0;   // mean training loss over the steps since the last evaluation
  int64_t train_loss_steps = 0;
  std::vector<EvalPoint> curve;
  std::optional<TimeToAccuracy> tta;
  Json preemptions = Json::array();
  Json noise = Json::object();  // NoiseScaleEstimator state
  // Exposed communication split (same-host runs): summed waiting for the slowest rank's backward, and
  // summed communication after it, over split_steps steps.
  double wait_slowest = 0, after_last = 0;
  int64_t split_steps = 0;
  // K-FAC: the statistics allreduces so far and the bytes of their buffers (sync_step.cpp).
  int64_t curvature_exchanges = 0;
  double curvature_bytes = 0;
  // Pipeline stages: the units' measured seconds the stages were cut by, so that a resumed run (or one started
  // --init-from it) cuts them the same way.
  std::vector<double> pipeline_unit_seconds;
  // Rank 0's MLLOG file's length in bytes when the checkpoint was written (-1: unknown, a checkpoint from before it):
  // a resumed run cuts the file back to it, dropping what the attempt logged after its checkpoint.
  int64_t mllog_bytes = -1;
  // The first point of `curve` the MLLOG file holds: 0, or the inherited curve's length in a run started
  // --init-from another's checkpoint (its file holds only its own evaluations, `curve` the other run's too). Counted
  // in points, not steps: asynchronous SGD labels its evaluations by server updates.
  int64_t mllog_from_point = 0;
  // When the MLLOG file's timed run ended (ms since the epoch; -1: not yet): the evaluation that reached the target.
  // A resumed run logs nothing more but the run_stop, at this time (mllog::Logger::end_timed_run).
  int64_t mllog_timed_run_end_ms = -1;

  // One more timed step: its phases and the (rank-mean) training loss.
  void add_step(const StepTiming& t, double loss);
  // `tta` again from the curve, for the target `target` (<= 0: none): a run started --init-from another's
  // checkpoint may have another target than the run whose curve it continues.
  void retarget(double target);
  // Training images per second over the timed steps.
  double images_per_second(int64_t global_batch) const;
  // The same over the steps after each attempt's first; none when no attempt had a second step.
  std::optional<double> steady_images_per_second(int64_t global_batch) const;

  Json to_json() const;
  static TrainState from_json(const Json& j);  // BadInput when a key is missing or of the wrong type
};

}  // namespace dtbench
