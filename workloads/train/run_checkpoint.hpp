// Saving a run at a step boundary (on a stop signal) and resuming it (--resume): each rank's weights,
// batch-norm statistics, optimizer, backend and schedule state go to its rank file, and the run state
// (run_state.hpp) with the config and rank count to the header (file format: checkpoint.hpp). A resumed
// run ends with exactly the weights an uninterrupted one would have.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "core/json.hpp"
#include "optim/schedule.hpp"
#include "workloads/train/noise_scale.hpp"
#include "workloads/train/run_state.hpp"
#include "workloads/backend/train_model.hpp"
#include "workloads/train/world.hpp"

namespace dtbench {

// Collective. `st` is completed with the noise estimator's state before rank 0 writes the header; `placement` is
// the run's placement() and `data_shape` the shape of its data (image counts, channels, height, width, classes),
// which the header keeps: a run that continues the checkpoint must train on data of that shape.
void save_checkpoint(const World& world, const std::filesystem::path& dir, const Json& cfg, TrainModel& model,
                     const optim::Schedule& schedule, const std::optional<NoiseScaleEstimator>& noise,
                     TrainState& st, const Json& placement, const Json& data_shape);

// Collective, once every rank loaded a checkpoint (--resume, --init-from): each rank read its own copy (a node's
// disk), and one whose header.json is not rank 0's (another run's checkpoint, a stale copy) would train from other
// weights, or wait for the others at another step. BadInput naming the rank and the first difference then.
void agree_on_checkpoint(const World& world, const std::filesystem::path& dir, const std::string& option);

// Where the ranks run, as far as their sums depend on it: {"threads": [fewest, most] compute threads of the ranks,
// "nodes": each rank's node as the launcher placed it (Comm::nodes())}. Bitwise resumption holds for the same
// placement: oneDNN splits sums over threads, which `threads` 0 leaves to where the ranks run
// (World::default_threads), and the hierarchical reducer sums within nodes first. Checkpoints keep it.
// Collective; the trainer takes it once, when it sets the thread count.
Json placement(const World& world);

// Loads the checkpoint in `dir` into the model, schedule, estimator and `st`; false (nothing changed)
// when there is none. BadInput when it was written by another config or rank count, on data of another shape than
// `data_shape` (/data/path may differ: its files may not), or is damaged. `placement`
// is the run's placement() (this makes no collective call that a rank failing before it would leave waiting: it
// runs inside World::on_every_rank); a run resumed on other thread counts or nodes says so in its preemption's
// entry (threads_changed, nodes_changed).
bool resume_from_checkpoint(const World& world, const std::filesystem::path& dir, const Json& cfg, TrainModel& model,
                            optim::Schedule& schedule, std::optional<NoiseScaleEstimator>& noise, TrainState& st,
                            const Json& placement, const Json& data_shape);

// --init-from (population-based training's exploit step, Jaderberg et al. 2017): starts this run from another
// run's checkpoint `dir`, which must exist: weights, batch-norm statistics, optimizer and backend state, the
// step and the run state (curve, time to accuracy, timings), with this config's hyperparameters. The configs
// may differ only in the keys of kInitFromMayDiffer (run_checkpoint.cpp): name, seed, output, duration,
// evaluation, the optimizer's hyperparameters (not which optimizer), the schedule and learning-rate scaling. A
// different seed draws the data order (and dropout masks) from the checkpoint's step on with this run's seed:
// a population-based training member keeps its own data stream when it takes another's weights. The schedule
// state is loaded only when the learning rate, schedule and scaling are unchanged (a changed one starts its
// schedule afresh at the checkpoint's step). BadInput naming the first other difference, a different rank
// count, data of another shape than `data_shape`, or a checkpoint at or past `stop_step`, where this run stops.
// With the same config the continuation computes what one run would (bitwise, tests/pbt), but for the
// evaluation the first run made where it stopped: a plateau schedule observes it, and local SGD on several ranks
// averages the models for it.
void init_from_checkpoint(const World& world, const std::filesystem::path& dir, const Json& cfg, TrainModel& model,
                          optim::Schedule& schedule, std::optional<NoiseScaleEstimator>& noise, TrainState& st,
                          int64_t stop_step, const Json& data_shape);

}  // namespace dtbench
