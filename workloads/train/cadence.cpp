#include "workloads/train/cadence.hpp"

namespace dtbench {

Cadence::Cadence(const Json& eval, int64_t steps_per_epoch_, int64_t total_steps_, int64_t stop_step_)
    : steps_per_epoch(steps_per_epoch_),
      total_steps(total_steps_),
      stop_step(stop_step_ > 0 ? stop_step_ : total_steps_),
      every_steps(eval["every_steps"].get<int64_t>()),
      every_epochs(eval["every_epochs"].get<int64_t>()) {}

}  // namespace dtbench
