// The real default data set, Fashion-MNIST from the Debian package dataset-fashion-mnist.
//
// Reference values were computed independently from the raw files with Python's gzip module and numpy
// (/usr/bin/python3):
//   L = gzip.open('train-labels-idx1-ubyte.gz').read(); list(L[8:18])  -> [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]
//   I = np.frombuffer(gzip.open('train-images-idx3-ubyte.gz').read()[16:], np.uint8)
//   I[:784].sum() -> 76247, I.sum(dtype=np.int64) -> 3431114169, I.mean()/255 -> 0.2860405969887955,
//   (I/255.).std() -> 0.35302424451492237 (population std, numpy's default)
//   and for t10k: labels [9, 2, 1, 1, 6, 1, 4, 6, 5, 7], first image sum 33456, total 573469082.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "helpers.hpp"
#include "workloads/data/dataset.hpp"

namespace dtbench::data::test {
namespace {

const fs::path kDir = "/usr/share/datasets/fashion-mnist";

Json default_section() {
  Json d;
  d["dataset"] = "fashion-mnist";
  d["path"] = "";
  d["normalize"] = true;
  d["augment"] = {{"random_crop_padding", 0}, {"horizontal_flip", false}};
  return d;
}

uint64_t pixel_sum(const Dataset& ds, size_t first, size_t count) {
  return std::accumulate(ds.images.begin() + static_cast<std::ptrdiff_t>(first),
                         ds.images.begin() + static_cast<std::ptrdiff_t>(first + count), uint64_t{0});
}

// Loaded once for all tests of this file (about 0.3 s to inflate 26 MB).
class FashionMnist : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(fs::exists(kDir / "train-images-idx3-ubyte.gz"))
        << "Fashion-MNIST is missing: apt-get install dataset-fashion-mnist";
    data = new TrainTest(load(default_section(), 1));
  }
  static void TearDownTestSuite() {
    delete data;
    data = nullptr;
  }
  static TrainTest* data;
};
TrainTest* FashionMnist::data = nullptr;

TEST_F(FashionMnist, ShapesAndCounts) {
  for (const Dataset* ds : {&data->train, &data->test}) {
    EXPECT_EQ(ds->name, "fashion-mnist");
    EXPECT_EQ(ds->channels, 1);
    EXPECT_EQ(ds->height, 28);
    EXPECT_EQ(ds->width, 28);
    EXPECT_EQ(ds->classes, 10);
    EXPECT_EQ(ds->images.size(), ds->size() * 784);
  }
  EXPECT_EQ(data->train.size(), 60000u);
  EXPECT_EQ(data->test.size(), 10000u);
}

TEST_F(FashionMnist, BalancedClasses) {
  std::vector<int> train(10, 0), test(10, 0);
  for (int32_t l : data->train.labels) ++train.at(static_cast<size_t>(l));
  for (int32_t l : data->test.labels) ++test.at(static_cast<size_t>(l));
  EXPECT_EQ(train, std::vector<int>(10, 6000));
  EXPECT_EQ(test, std::vector<int>(10, 1000));
}

TEST_F(FashionMnist, MatchesRawBytesDecodedWithPython) {
  EXPECT_EQ(std::vector<int32_t>(data->train.labels.begin(), data->train.labels.begin() + 10),
            (std::vector<int32_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
  EXPECT_EQ(std::vector<int32_t>(data->test.labels.begin(), data->test.labels.begin() + 10),
            (std::vector<int32_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}));
  EXPECT_EQ(pixel_sum(data->train, 0, 784), 76247u);
  EXPECT_EQ(pixel_sum(data->train, 0, data->train.images.size()), 3431114169u);
  EXPECT_EQ(pixel_sum(data->test, 0, 784), 33456u);
  EXPECT_EQ(pixel_sum(data->test, 0, data->test.images.size()), 573469082u);
  const auto [lo, hi] = std::minmax_element(data->train.images.begin(), data->train.images.end());
  EXPECT_EQ(*lo, 0);
  EXPECT_EQ(*hi, 255);
}

TEST_F(FashionMnist, NormalisationFromTrainingSet) {
  // Reference from numpy in float64; ours is exact then rounded to float: 1e-6 covers float rounding.
  ASSERT_EQ(data->norm.mean.size(), 1u);
  EXPECT_NEAR(data->norm.mean[0], 0.2860405969887955, 1e-6);
  EXPECT_NEAR(data->norm.std[0], 0.35302424451492237, 1e-6);
}

TEST_F(FashionMnist, UncompressedCopyReadsTheSame) {
  // Decompress the test files with zlib's gz* API into a temp folder and read them plain.
  const fs::path tmp = fs::temp_directory_path() / ("dtbench_fmnist_plain_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  for (const char* base : {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    gzFile gz = gzopen((kDir / (std::string(base) + ".gz")).c_str(), "rb");
    ASSERT_NE(gz, nullptr);
    Bytes plain;
    uint8_t buf[65536];
    int got;
    while ((got = gzread(gz, buf, sizeof buf)) > 0) plain.insert(plain.end(), buf, buf + got);
    gzclose(gz);
    write_file(tmp / base, plain);
  }
  const Dataset plain = read_idx(tmp / "t10k-images-idx3-ubyte", tmp / "t10k-labels-idx1-ubyte", 10);
  fs::remove_all(tmp);
  EXPECT_EQ(plain.images, data->test.images);
  EXPECT_EQ(plain.labels, data->test.labels);
}

}  // namespace
}  // namespace dtbench::data::test
