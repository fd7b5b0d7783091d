// The validation set held out of the training set (/data/validation_size): the last v training images, in
// order, byte for byte; the training set keeps the rest; the epoch's shards draw only from it; and a size that
// leaves nothing to train on is refused naming the key. And the test set cut to its first images
// (/eval/test_samples).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "config/run_config.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "workloads/train/training_data.hpp"

namespace dtbench {
namespace {

Json synthetic(int64_t validation, int64_t test_samples = 0) {
  Json user = {{"model", {{"arch", "mlp"}}},
               {"eval", {{"test_samples", test_samples}}},
               {"data", {{"dataset", "synthetic"},
                         {"validation_size", validation},
                         {"synthetic", {{"channels", 1}, {"height", 4}, {"width", 4}, {"classes", 3},
                                        {"train_size", 100}, {"test_size", 10}}}}},
               {"batch", {{"global", 8}}}};
  return config::resolve(user, 1);
}

TEST(ValidationSplit, TheLastImagesAreHeldOutAndNeverTrainedOn) {
  TrainingData all(synthetic(0), 1, 0, 8), split(synthetic(30), 1, 0, 8);
  ASSERT_FALSE(all.has_validation());
  ASSERT_TRUE(split.has_validation());
  const size_t bytes = all.train().image_bytes();
  ASSERT_EQ(split.train().size(), 70u);
  ASSERT_EQ(split.validation().size(), 30u);
  EXPECT_EQ(0, std::memcmp(split.train().images.data(), all.train().images.data(), 70 * bytes));
  EXPECT_EQ(0, std::memcmp(split.validation().images.data(), all.train().image(70), 30 * bytes));
  for (size_t i = 0; i < 30; ++i) EXPECT_EQ(split.validation().labels[i], all.train().labels[70 + i]);
  EXPECT_EQ(split.steps_per_epoch(), 70 / 8);  // the epoch counts the images left to train on
  // The normalisation's mean and standard deviation are the 70 training images' (data::channel_stats), not the
  // 100 images' that include the held-out ones: computed here by hand from the pixels.
  double sum = 0, sq = 0;
  for (size_t i = 0; i < 70 * bytes; ++i) {
    const double p = split.train().images[i] / 255.0;
    sum += p, sq += p * p;
  }
  const double mean = sum / (70.0 * bytes), sd = std::sqrt(sq / (70.0 * bytes) - mean * mean);
  EXPECT_NEAR(split.normalization().mean[0], mean, 1e-5);
  EXPECT_NEAR(split.normalization().std[0], sd, 1e-5);
  EXPECT_NE(split.normalization().mean[0], all.normalization().mean[0]);
  EXPECT_EQ(split.eval_indices(EvalSet::validation, true).size(), 30u);
  EXPECT_EQ(split.eval_indices(EvalSet::test, true).size(), 10u);
  // Each training batch of an epoch is made from the first 70 images only: its pixels match one of them.
  std::set<std::vector<float>> held;
  for (size_t i = 0; i < 30; ++i) {
    split.make_eval_batch(EvalSet::validation, std::vector<uint32_t>{static_cast<uint32_t>(i)});
    held.insert(std::vector<float>(split.x(), split.x() + split.sample_floats()));
  }
  for (int64_t step = 0; step < split.steps_per_epoch(); ++step) {
    split.make_train_batch(step);
    for (int j = 0; j < 8; ++j) {
      const float* x = split.x() + static_cast<size_t>(j) * split.sample_floats();
      EXPECT_EQ(held.count(std::vector<float>(x, x + split.sample_floats())), 0u) << "step " << step << " sample " << j;
    }
  }
}

TEST(ValidationSplit, ASizeThatLeavesNothingToTrainOnIsRefused) {
  try {
    TrainingData d(synthetic(100), 1, 0, 8);
    FAIL() << "accepted";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), "/data/validation_size: 100 images leave none of the training set's 100 to train on");
  }
}

TEST(TestSamples, TheTestSetsFirstImagesAreKeptAndTooManyIsRefused) {
  TrainingData all(synthetic(0), 1, 0, 8), first(synthetic(0, 4), 1, 0, 8);
  ASSERT_EQ(all.test().size(), 10u);
  ASSERT_EQ(first.test().size(), 4u);
  EXPECT_EQ(first.test().images, std::vector<uint8_t>(all.test().images.begin(),
                                                       all.test().images.begin() + 4 * all.test().image_bytes()));
  EXPECT_EQ(first.test().labels, std::vector<int32_t>(all.test().labels.begin(), all.test().labels.begin() + 4));
  EXPECT_EQ(first.eval_indices(EvalSet::test, true).size(), 4u);
  EXPECT_EQ(first.train().images, all.train().images);  // the training set is untouched
  // The config's rules refuse it for the synthetic set, whose size the config holds; a file's size is known once
  // it is read, where TrainingData refuses it (checked here past the rules).
  try {
    synthetic(0, 11);
    FAIL() << "accepted";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("/eval/test_samples: 11 is more than the test set's 10 images "
                                         "(/data/synthetic/test_size)"),
              std::string::npos)
        << e.what();
  }
  Json past_the_rules = synthetic(0);
  past_the_rules["eval"]["test_samples"] = 11;
  try {
    TrainingData d(past_the_rules, 1, 0, 8);
    FAIL() << "accepted";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), "/eval/test_samples: 11 is more than the test set's 10 images");
  }
}

// The batch buffer (one per rank, the largest of the training and evaluation batches, as floats) times the ranks on
// this machine is refused when it exceeds the machine's memory: here a buffer of 10 test images of 4 x 4 floats
// (640 bytes) with as many ranks as make it exceed the memory by one buffer.
TEST(ValidationSplit, TheBatchBuffersOfTheMachinesRanksMustFit) {
  const double memory = physical_memory_bytes();
  if (memory <= 0 || memory / 640 > 2e9) GTEST_SKIP() << "memory unknown, or more than 2e9 buffers of 640 B";
  const int fits = static_cast<int>(memory / 640);
  TrainingData alone(synthetic(0), 1, 0, 8, fits);  // 8 training and 10 test images a batch: 10 x 64 B
  try {
    TrainingData d(synthetic(0), 1, 0, 8, fits + 1);
    FAIL() << "accepted";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()).rfind("/eval/batch: a batch of 10 images of 1 x 4 x 4 floats takes 640 B on each of the " +
                                          std::to_string(fits + 1) + " ranks on this machine, more than its ", 0),
              0u)
        << e.what();
  }
}

}  // namespace
}  // namespace dtbench
