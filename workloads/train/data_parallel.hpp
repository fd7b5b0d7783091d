// How the ranks combine their work in synchronous, local and post-local SGD: the configured reducer and
// the gradient buckets that start its allreduces during backward (buckets.hpp), local SGD's model
// averaging (Lin et al. 2018: local steps from `switch_step` on, an average every H steps), the
// gradient noise scale fed by the buckets' local norms (noise_scale.hpp), synchronised batch norm's own
// communicator, and whether the exposed-communication split can be measured. Asynchronous SGD has its own
// protocol (async_loop.hpp) and builds none of this.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/json.hpp"
#include "reducers/mpi_comm.hpp"
#include "reducers/reducer.hpp"
#include "workloads/train/buckets.hpp"
#include "workloads/train/model_parallel.hpp"
#include "workloads/train/noise_scale.hpp"
#include "workloads/backend/train_model.hpp"
#include "workloads/train/world.hpp"

namespace dtbench {

class DataParallel {
 public:
  // From the resolved config's /parallel and /reducer sections; the model's parameter table gives the
  // buckets. steps_per_epoch and total_steps place post-local SGD's switch.
  // With tensor model parallelism (model_parallel not null) the replicas are the model-parallel groups and the
  // reducer runs on the ranks holding this rank's shard (model_parallel.hpp).
  DataParallel(const Json& cfg, const World& world, TrainModel& model, long per_rank, long global_batch,
               int64_t steps_per_epoch, int64_t total_steps, const ModelParallel* model_parallel);

  // The data-parallel replicas whose gradients are averaged: the ranks, or the model-parallel groups.
  int replicas() const { return ranks_; }
  // Tensor model parallelism's side of the run; null without it.
  const ModelParallel* model_parallel() const { return model_parallel_; }

  // Whether `step` is a local step (no gradient allreduce): local SGD, or post-local SGD after its switch.
  bool local_step(int64_t step) const { return ranks_ > 1 && step >= switch_step_; }
  // Whether the models are averaged after local step `step`.
  bool averages_after(int64_t step) const { return local_step(step) && (step + 1 - switch_step_) % local_steps_ == 0; }
  // Averages weights and batch-norm statistics across ranks through the reducer (local SGD).
  void average_models(TrainModel& model);
  // A replica's own weights and batch-norm statistics, kept across an evaluation of the replicas' mean model.
  struct OwnModel {
    std::vector<float> params, buffers;
  };
  // Local SGD's evaluation after local step `step` (Lin et al. 2018 evaluate the averaged model): makes the model
  // the replicas' mean and returns this rank's own for restore_model(), so that the run trains on from its own
  // weights and the evaluation cadence does not change the training (it did: an evaluation was one more average).
  // nullopt, changing nothing, where the replicas already hold one model (one replica; `step` ended with an average).
  std::optional<OwnModel> average_for_evaluation(TrainModel& model, int64_t step);
  static void restore_model(TrainModel& model, const OwnModel& own);
  // Batch norm's running statistics as one model's, for an evaluation and the saved weights: the mean over the
  // replicas of each one's own statistics (as timm's distributed batch-norm "reduce"). The exponential average
  // is linear, so that mean is the running average of the replicas' mean batch statistics: the same for K ranks
  // x b as for K*m ranks, whose micro-batches sync_step.cpp averages alike. Each replica goes on training with its
  // own. Returns this rank's own statistics for restore_buffers(); nullopt, changing nothing, where the replicas'
  // statistics are already one model's: one replica, synchronised batch norm, no batch norm. (After local SGD's
  // average_models they are too; the trainer does not call this then.)
  std::optional<std::vector<float>> average_buffers(TrainModel& model);
  static void restore_buffers(TrainModel& model, const std::vector<float>& own);

  Reducer& reducer() { return *reducer_; }
  GradientBuckets& buckets() { return *buckets_; }
  size_t bucket_count() const { return buckets_->count(); }
  std::optional<NoiseScaleEstimator>& noise() { return noise_; }
  // All ranks share one host clock and backward is timed on the host: the exposed-communication split
  // (waiting for the slowest rank's backward against communication after it) is meaningful.
  bool same_clock() const { return same_clock_; }
  // The bytes each rank hands to allreduce per step, the mean over a run of `steps` steps: a synchronous step
  // allreduces the gradients (`gradient_bytes`), a local SGD average every H local steps the weights and batch
  // norm's statistics (`gradient_bytes` + `buffer_bytes`); post-local SGD is synchronous before its switch. The
  // averages before an evaluation are not counted (not a training step's).
  double bytes_allreduced_per_step(double gradient_bytes, double buffer_bytes, int64_t steps) const;
  // What each rank sends to allreduce `bytes` (nccl-tests' busbw convention: bus factor x buffer).
  double bus_bytes(double bytes) const;

 private:
  int ranks_;  // replicas
  bool per_replica_statistics_ = false;  // synchronous, per-replica batch norm on several replicas
  const ModelParallel* model_parallel_ = nullptr;
  int64_t switch_step_ = 0, local_steps_ = 1;
  std::unique_ptr<OwnedComm> bn_comm_;  // synchronised batch norm's allreduces
  std::unique_ptr<MpiComm> comm_;
  std::unique_ptr<Reducer> reducer_;
  std::unique_ptr<GradientBuckets> buckets_;
  std::optional<NoiseScaleEstimator> noise_;
  bool same_clock_ = false;
};

}  // namespace dtbench
