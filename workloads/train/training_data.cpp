#include "workloads/train/training_data.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "core/provenance.hpp"

namespace dtbench {

TrainingData::TrainingData(const Json& cfg, int ranks, int rank, long per_rank, int node_ranks) : ranks_(ranks), rank_(rank) {
  const uint64_t seed = static_cast<uint64_t>(cfg["seed"].get<int64_t>());
  data_ = data::load(cfg["data"], seed);
  const size_t held = static_cast<size_t>(cfg["data"]["validation_size"].get<int64_t>());
  if (held > 0) {
    data::Dataset& t = data_.train;
    if (held >= t.size())
      throw BadInput("/data/validation_size: " + std::to_string(held) + " images leave none of the training set's " +
                     std::to_string(t.size()) + " to train on");
    const size_t keep = t.size() - held;
    validation_ = t;  // shape and name
    validation_.name = t.name + " (validation)";
    validation_.images.assign(t.images.begin() + static_cast<std::ptrdiff_t>(keep * t.image_bytes()), t.images.end());
    validation_.labels.assign(t.labels.begin() + static_cast<std::ptrdiff_t>(keep), t.labels.end());
    t.images.resize(keep * t.image_bytes());
    t.labels.resize(keep);
    // The normalisation is a statistic of the training set: the images left to train on, not the held-out ones.
    if (cfg["data"]["normalize"].get<bool>()) data_.norm = data::channel_stats(t);
  }
  // /eval/test_samples: the test set's first N images (the readers keep the files' order).
  const size_t test_samples = static_cast<size_t>(cfg["eval"]["test_samples"].get<int64_t>());
  test_set_samples_ = data_.test.size();
  if (test_samples > data_.test.size())
    throw BadInput("/eval/test_samples: " + std::to_string(test_samples) + " is more than the test set's " +
                   std::to_string(data_.test.size()) + " images");
  if (test_samples > 0) {
    data_.test.images.resize(test_samples * data_.test.image_bytes());
    data_.test.labels.resize(test_samples);
  }
  try {
    sharder_ = std::make_unique<data::EpochSharder>(data_.train.size(), ranks, static_cast<size_t>(per_rank), seed);
  } catch (const BadInput& e) {
    // The images held out are part of why (the message named /batch/global alone; a hunt).
    if (held == 0) throw;
    throw BadInput(std::string(e.what()) + " (after /data/validation_size holds out " + std::to_string(held) + ")");
  }
  train_maker_ = std::make_unique<data::BatchMaker>(data_.norm, data_.augment, seed);
  eval_maker_ = std::make_unique<data::BatchMaker>(data_.norm, data::AugmentOptions{}, seed);
  // One buffer for the largest batch made: an evaluation batch is never larger than the set it evaluates (500
  // images of 4096 x 4096 asked for 100 GB where the test set had 32).
  const size_t eval_batch = std::min(static_cast<size_t>(cfg["eval"]["batch"].get<int64_t>()),
                                     std::max(data_.test.size(), validation_.size()));
  const size_t max_batch = std::max(static_cast<size_t>(per_rank), eval_batch);
  solo_eval_batch_ = eval_batch;
  const double bytes = static_cast<double>(max_batch) * static_cast<double>(data_.train.image_bytes()) * sizeof(float);
  const double memory = physical_memory_bytes();
  if (memory > 0 && bytes * std::max(node_ranks, 1) > memory)
    throw BadInput(std::string(eval_batch > static_cast<size_t>(per_rank) ? "/eval/batch" : "/batch") + ": a batch of " +
                   std::to_string(max_batch) + " images of " + std::to_string(data_.train.channels) + " x " +
                   std::to_string(data_.train.height) + " x " + std::to_string(data_.train.width) + " floats takes " +
                   bytes_text(bytes) + (node_ranks > 1 ? " on each of the " + std::to_string(node_ranks) + " ranks on this machine" : std::string()) +
                   ", more than its " + bytes_text(memory) + memory_limit_note());
  eval_batch_ = std::min(static_cast<size_t>(cfg["eval"]["batch"].get<int64_t>()),
                         std::max(eval_indices(EvalSet::test, false).size(), eval_indices(EvalSet::validation, false).size()));
  x_.resize(max_batch * data_.train.image_bytes());
  y_.resize(max_batch);
}

void TrainingData::make_train_batch(int64_t step) {
  const int64_t spe = steps_per_epoch();
  const uint64_t epoch = static_cast<uint64_t>(step / spe);
  auto idx = sharder_->indices(epoch, static_cast<size_t>(step % spe), rank_);
  train_maker_->make(data_.train, idx, epoch, x_.data(), y_.data());
}

std::vector<uint32_t> TrainingData::eval_indices(EvalSet set, bool solo) const {
  const size_t n = set == EvalSet::test ? data_.test.size() : validation_.size();
  return data::eval_indices(n, solo ? 1 : ranks_, solo ? 0 : rank_);
}

void TrainingData::make_eval_batch(EvalSet set, std::span<const uint32_t> idx) {
  eval_maker_->make(set == EvalSet::test ? data_.test : validation_, idx, 0, x_.data(), y_.data());
}

}  // namespace dtbench
