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

// Collective. `st` is completed with the noise estimator's state before rank 0 writes the header.
void save_checkpoint(const World& world, const std::filesystem::path& dir, const Json& cfg, TrainModel& model,
                     const optim::Schedule& schedule, const std::optional<NoiseScaleEstimator>& noise,
                     TrainState& st);

// Loads the checkpoint in `dir` into the model, schedule, estimator and `st`; false (nothing changed)
// when there is none. BadInput when it was written by another config or rank count, or is damaged.
bool resume_from_checkpoint(const World& world, const std::filesystem::path& dir, const Json& cfg, TrainModel& model,
                            optim::Schedule& schedule, std::optional<NoiseScaleEstimator>& noise, TrainState& st);

}  // namespace dtbench
