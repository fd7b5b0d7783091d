// The loop of asynchronous SGD (async_ps.hpp): every rank is a worker that computes a gradient on its
// shard of the data, pushes it to the parameter servers (rank 0, or ranks 0..S-1 each owning a shard of the
// parameters) and pulls the weights back, with no barrier; the server ranks also run a server thread, and
// rank 0 evaluates alone on its current weights. Each worker runs its share of
// the steps (the same shards as synchronous training). Asynchronous runs are not checkpointed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/json.hpp"
#include "core/run_record.hpp"
#include "optim/schedule.hpp"
#include "workloads/train/cadence.hpp"
#include "workloads/train/fault_injection.hpp"
#include "workloads/train/mllog.hpp"
#include "workloads/train/run_state.hpp"
#include "workloads/backend/train_model.hpp"
#include "workloads/train/training_data.hpp"
#include "workloads/train/world.hpp"

namespace dtbench {

struct AsyncOutcome {
  RunStatus status = RunStatus::completed;
  std::string detail;
  Json stats;  // the server's staleness statistics (rank 0; null elsewhere)
};

// evaluate(steps_done, epoch): rank 0's solo evaluation, which fills st.curve and st.tta; progress(done):
// the console's progress line. log is null except on rank 0. staleness_bound: SSP's s, < 0 for none.
// servers: the shard servers S (ranks 0..S-1); with S > 1 each builds an optimizer over its shard from
// optimizer_section and seed (as the model built its own). poll_us: reducer.poll_us, the servers' waits.
// fault: --inject-fault (null: none); nan-grad@RANK:STEP poisons that rank's own gradient, as in a local SGD step.
// A stop signal on any rank stops every worker at its next push (the run is then `preempted`, with no checkpoint).
AsyncOutcome run_async_sgd(const World& world, TrainModel& model, const optim::Schedule& schedule, TrainingData& data,
                           const Cadence& cadence, long per_rank, bool stop_at_target, int64_t staleness_bound,
                           int servers, int poll_us, const Json& optimizer_section, uint64_t seed, TrainState& st,
                           mllog::Logger* log, const FaultInjection* fault,
                           const std::function<void(int64_t, double)>& evaluate,
                           const std::function<void(int64_t)>& progress);

}  // namespace dtbench
