// A run's data: the training and test sets in memory, this rank's shard of every step's global batch
// (workloads/data/shard.hpp: K ranks x b see exactly what 1 rank x K*b sees), and the batch buffer that
// training and evaluation batches are made into. The shard is contiguous in the epoch's permutation, so
// micro-batch j of rank r (samples j*b' .. j*b'+b' of its batch, b' = b / m) holds exactly the samples
// rank r*m+j of K*m ranks with batch b' gets: gradient accumulation needs no sharding of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/json.hpp"
#include "workloads/data/batch.hpp"
#include "workloads/data/dataset.hpp"
#include "workloads/data/shard.hpp"

namespace dtbench {

// The sets evaluations run on: the test set, and the validation set held out of the training set.
enum class EvalSet { test, validation };

class TrainingData {
 public:
  // Loads /data of the resolved config; per_rank is this rank's batch, eval_batch /eval/batch. With
  // /data/validation_size v > 0 the last v training images become the validation set (as Keras's
  // validation_split takes the last samples): never in a training batch. BadInput when v leaves no training image,
  // or when the batch buffer of the `node_ranks` ranks on this machine (each holds one) exceeds its memory.
  TrainingData(const Json& cfg, int ranks, int rank, long per_rank, int node_ranks = 1);

  const data::Dataset& train() const { return data_.train; }
  const data::Normalization& normalization() const { return data_.norm; }
  const data::Dataset& test() const { return data_.test; }
  const data::Dataset& validation() const { return validation_; }
  bool has_validation() const { return validation_.size() > 0; }
  int64_t steps_per_epoch() const { return static_cast<int64_t>(sharder_->steps_per_epoch()); }

  // The position of this rank's first sample in every step's global batch (rank r of K: r * b; shard.hpp).
  uint64_t batch_offset() const { return static_cast<uint64_t>(rank_) * sharder_->per_rank_batch(); }
  // Makes this rank's part of training step `step` (counted from the run's start) into x() and labels().
  void make_train_batch(int64_t step);
  // This rank's indices of an evaluation set (all of them when `solo`, for rank 0 evaluating alone) and,
  // for each batch of them, the batch made into x() and labels().
  std::vector<uint32_t> eval_indices(EvalSet set, bool solo) const;
  // The largest batch this rank's share of an evaluation makes (/eval/batch, or fewer when its share of the larger
  // set is smaller).
  size_t eval_batch() const { return eval_batch_; }
  // The same for rank 0 evaluating alone (asynchronous SGD): /eval/batch, or fewer when the larger set is smaller.
  size_t solo_eval_batch() const { return solo_eval_batch_; }
  // The whole test set's images, before /eval/test_samples kept the first N (extra.test_set_samples).
  size_t test_set_samples() const { return test_set_samples_; }
  void make_eval_batch(EvalSet set, std::span<const uint32_t> idx);

  const float* x() const { return x_.data(); }
  const int32_t* labels() const { return y_.data(); }
  // Floats per sample in x() (C x H x W), to address a micro-batch's slice of the batch.
  size_t sample_floats() const { return data_.train.image_bytes(); }
  // The data set's files (none for synthetic data), which no output of the run may replace.
  const std::vector<std::filesystem::path>& files() const { return data_.files; }

 private:
  int ranks_, rank_;
  size_t eval_batch_ = 0, solo_eval_batch_ = 0, test_set_samples_ = 0;
  data::TrainTest data_;
  data::Dataset validation_;  // empty without /data/validation_size
  std::unique_ptr<data::EpochSharder> sharder_;
  std::unique_ptr<data::BatchMaker> train_maker_, eval_maker_;
  std::vector<float> x_;
  std::vector<int32_t> y_;
};

}  // namespace dtbench
