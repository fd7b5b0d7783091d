// Synthetic data set: shape, balanced labels, determinism, and that it has learnable class structure
// shared by the train and test splits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "helpers.hpp"
#include "workloads/data/dataset.hpp"

namespace dtbench::data::test {
namespace {

TEST(Synthetic, ShapeAndBalancedLabels) {
  const Dataset ds = make_synthetic(3, 5, 7, 4, 10, 1, false);
  EXPECT_EQ(ds.name, "synthetic");
  EXPECT_EQ(ds.channels, 3);
  EXPECT_EQ(ds.height, 5);
  EXPECT_EQ(ds.width, 7);
  EXPECT_EQ(ds.classes, 4);
  EXPECT_EQ(ds.image_bytes(), 105u);
  EXPECT_EQ(ds.images.size(), 1050u);
  EXPECT_EQ(ds.labels, (std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1}));
  // Fewer samples than classes, and none at all.
  EXPECT_EQ(make_synthetic(1, 2, 2, 10, 3, 1, false).labels, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(make_synthetic(1, 2, 2, 10, 0, 1, false).size(), 0u);
}

TEST(Synthetic, DeterministicInSeedAndSplit) {
  const Dataset a = make_synthetic(3, 8, 8, 5, 50, 42, false);
  EXPECT_EQ(a.images, make_synthetic(3, 8, 8, 5, 50, 42, false).images);
  EXPECT_NE(a.images, make_synthetic(3, 8, 8, 5, 50, 43, false).images);
  EXPECT_NE(a.images, make_synthetic(3, 8, 8, 5, 50, 42, true).images);
  // Sample i does not depend on how many samples are made.
  const Dataset more = make_synthetic(3, 8, 8, 5, 80, 42, false);
  EXPECT_TRUE(std::equal(a.images.begin(), a.images.end(), more.images.begin()));
}

TEST(Synthetic, RejectsEmptyShapes) {
  EXPECT_EQ(bad_input([] { make_synthetic(0, 4, 4, 10, 5, 1, false); }),
            "synthetic data set: channels, height, width and classes must be >= 1 (got 0, 4, 4, 10)");
}

// Nearest class mean (class means from the training split, evaluated on the test split): far above
// chance (1 / classes) means a network has something real to learn, and the splits share their classes.
double nearest_mean_accuracy(const Dataset& train, const Dataset& test) {
  const size_t d = train.image_bytes(), k = static_cast<size_t>(train.classes);
  std::vector<double> mean(k * d, 0.0);
  std::vector<size_t> count(k, 0);
  for (size_t i = 0; i < train.size(); ++i) {
    const size_t c = static_cast<size_t>(train.labels[i]);
    ++count[c];
    for (size_t p = 0; p < d; ++p) mean[c * d + p] += train.image(i)[p];
  }
  for (size_t c = 0; c < k; ++c)
    for (size_t p = 0; p < d; ++p) mean[c * d + p] /= static_cast<double>(count[c]);
  size_t right = 0;
  for (size_t i = 0; i < test.size(); ++i) {
    size_t best = 0;
    double best_dist = std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < k; ++c) {
      double dist = 0.0;
      for (size_t p = 0; p < d; ++p) dist += std::pow(test.image(i)[p] - mean[c * d + p], 2);
      if (dist < best_dist) best_dist = dist, best = c;
    }
    right += best == static_cast<size_t>(test.labels[i]);
  }
  return static_cast<double>(right) / static_cast<double>(test.size());
}

TEST(Synthetic, LearnableClassStructure) {
  for (auto [c, h, w, classes] : {std::tuple{1, 28, 28, 10}, std::tuple{3, 32, 32, 10}, std::tuple{3, 8, 8, 50}}) {
    const Dataset train = make_synthetic(c, h, w, classes, 20 * static_cast<size_t>(classes), 7, false);
    const Dataset test = make_synthetic(c, h, w, classes, 200, 7, true);
    const double acc = nearest_mean_accuracy(train, test);
    SCOPED_TRACE(testing::Message() << c << "x" << h << "x" << w << ", " << classes << " classes");
    EXPECT_GT(acc, 0.9);  // chance is 1 / classes <= 0.1
    // A different seed has different prototypes: its test split should be near chance.
    const Dataset other = make_synthetic(c, h, w, classes, 200, 8, true);
    EXPECT_LT(nearest_mean_accuracy(train, other), 0.35);
  }
}

TEST(Synthetic, NoiseLevel) {
  // Pixels within a class scatter around the class mean with standard deviation close to sigma = 48
  // (a little less, because rounding and clamping at 0 and 255 shrink the tails).
  const Dataset ds = make_synthetic(1, 16, 16, 2, 2000, 3, false);
  const size_t d = ds.image_bytes();
  std::vector<double> mean(2 * d, 0.0);
  for (size_t i = 0; i < ds.size(); ++i)
    for (size_t p = 0; p < d; ++p) mean[static_cast<size_t>(ds.labels[i]) * d + p] += ds.image(i)[p] / 1000.0;
  double sq = 0.0;
  for (size_t i = 0; i < ds.size(); ++i)
    for (size_t p = 0; p < d; ++p) sq += std::pow(ds.image(i)[p] - mean[static_cast<size_t>(ds.labels[i]) * d + p], 2);
  const double sd = std::sqrt(sq / static_cast<double>(ds.size() * d));
  EXPECT_GT(sd, 40.0);
  EXPECT_LT(sd, 49.0);
}

}  // namespace
}  // namespace dtbench::data::test
