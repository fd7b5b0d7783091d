// Evaluation on the test set, or on the validation set held out of the training set: sharded over all ranks
// (their sums allreduced), or, for asynchronous SGD, by rank 0 alone on its current weights while the other
// ranks go on training ("solo").
#pragma once

#include <cstdint>
#include <optional>

#include "core/run_record.hpp"
#include "workloads/backend/train_model.hpp"
#include "workloads/train/pipeline.hpp"
#include "workloads/train/training_data.hpp"
#include "workloads/train/world.hpp"

namespace dtbench {

struct EvalResult {
  double loss = 0, accuracy = 0;
};

// Forward passes (train = false) over this rank's indices of `set` in batches of eval_batch. With pipeline
// stages, each batch flows through the replica's stages and the last stage counts it.
EvalResult evaluate_set(TrainModel& model, TrainingData& data, EvalSet set, const World& world, size_t eval_batch,
                        bool solo, Pipeline* pipeline = nullptr);

}  // namespace dtbench
