// When things happen in a run, counted in optimizer steps: epoch boundaries (for the MLLOG epoch events)
// and evaluations (every N steps, every N epochs, and always after the last step and where --stop-at ends the
// run). One rule for the
// synchronous and the asynchronous loop.
#pragma once

#include <cstdint>

#include "core/json.hpp"

namespace dtbench {

struct Cadence {
  int64_t steps_per_epoch = 1;
  int64_t total_steps = 0;
  int64_t stop_step = 0;     // where this run stops: total_steps, or earlier with --stop-at
  int64_t every_steps = 0;   // /eval/every_steps (0 = off)
  int64_t every_epochs = 0;  // /eval/every_epochs (0 = off)

  Cadence() = default;
  // From the resolved config's /eval section and the run's shape.
  Cadence(const Json& eval, int64_t steps_per_epoch, int64_t total_steps, int64_t stop_step = 0);

  int64_t epoch_of(int64_t step) const { return step / steps_per_epoch; }
  double epochs(int64_t steps) const { return static_cast<double>(steps) / static_cast<double>(steps_per_epoch); }
  bool starts_epoch(int64_t step) const { return step % steps_per_epoch == 0; }
  bool ends_epoch(int64_t done) const { return done % steps_per_epoch == 0; }
  // Whether to evaluate once `done` steps are done.
  bool evaluates_after(int64_t done) const {
    return done == total_steps || done == stop_step || (every_steps > 0 && done % every_steps == 0) ||
           (every_epochs > 0 && ends_epoch(done) && (epoch_of(done - 1) + 1) % every_epochs == 0);
  }
};

}  // namespace dtbench
