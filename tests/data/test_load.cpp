// load(): from the "/data" config section to data sets, normalisation and augmentation options, and
// the messages for missing files and bad values.
#include <gtest/gtest.h>

#include "helpers.hpp"
#include "workloads/data/dataset.hpp"

namespace dtbench::data::test {
namespace {

// The resolved section with the defaults of the config module, for a given data set.
Json section(const std::string& dataset, const std::string& path = "") {
  Json d;
  d["dataset"] = dataset;
  d["path"] = path;
  d["normalize"] = true;
  d["augment"] = {{"random_crop_padding", 0}, {"horizontal_flip", false}};
  d["synthetic"] = {{"channels", 3}, {"height", 32}, {"width", 32}, {"classes", 10}, {"train_size", 10000},
                    {"test_size", 2000}};
  return d;
}

using Load = TempDir;

TEST_F(Load, SyntheticFromConfig) {
  Json d = section("synthetic");
  d["synthetic"] = {{"channels", 2}, {"height", 6}, {"width", 5}, {"classes", 3}, {"train_size", 30}, {"test_size", 9}};
  d["augment"] = {{"random_crop_padding", 2}, {"horizontal_flip", true}};
  const TrainTest t = load(d, 11);
  EXPECT_EQ(t.train.name, "synthetic");
  EXPECT_EQ(t.train.size(), 30u);
  EXPECT_EQ(t.test.size(), 9u);
  EXPECT_EQ(t.train.channels, 2);
  EXPECT_EQ(t.train.height, 6);
  EXPECT_EQ(t.train.width, 5);
  EXPECT_EQ(t.train.classes, 3);
  EXPECT_EQ(t.train.images, make_synthetic(2, 6, 5, 3, 30, 11, false).images);  // the run seed is used
  EXPECT_EQ(t.test.images, make_synthetic(2, 6, 5, 3, 9, 11, true).images);
  EXPECT_EQ(t.augment.random_crop_padding, 2);
  EXPECT_TRUE(t.augment.horizontal_flip);
  // normalize: statistics of the training split, not the test split.
  const Normalization st = channel_stats(t.train);
  EXPECT_EQ(t.norm.mean, st.mean);
  EXPECT_EQ(t.norm.std, st.std);
  d["normalize"] = false;
  const TrainTest plain = load(d, 11);
  EXPECT_EQ(plain.norm.mean, (std::vector<float>{0.0f, 0.0f}));
  EXPECT_EQ(plain.norm.std, (std::vector<float>{1.0f, 1.0f}));
}

TEST_F(Load, IdxFolderGzipOrPlain) {
  // A folder given by /data/path with Debian's names, some gzip-compressed and some not.
  const Bytes px(2 * 4 * 4, 9);
  write_file(dir / "train-images-idx3-ubyte.gz", gzip(idx_images(2, 4, 4, px)));
  write_file(dir / "train-labels-idx1-ubyte", idx_labels(2, {1, 2}));
  write_file(dir / "t10k-images-idx3-ubyte", idx_images(1, 4, 4, Bytes(16, 3)));
  write_file(dir / "t10k-labels-idx1-ubyte.gz", gzip(idx_labels(1, {7})));
  const TrainTest t = load(section("mnist", dir.string()), 1);
  EXPECT_EQ(t.train.name, "mnist");
  EXPECT_EQ(t.train.labels, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(t.test.labels, (std::vector<int32_t>{7}));
  EXPECT_EQ(t.test.images, Bytes(16, 3));
}

TEST_F(Load, MissingDefaultFashionMnistHintsAtPackage) {
  // default_root stands in for /usr/share/datasets.
  const std::string gz = (dir / "fashion-mnist" / "train-images-idx3-ubyte.gz").string();
  const std::string plain = (dir / "fashion-mnist" / "train-images-idx3-ubyte").string();
  EXPECT_EQ(bad_input([&] { load(section("fashion-mnist"), 1, dir); }),
            "data file not found: " + gz + " (nor " + plain +
                "); install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist) or set "
                "/data/path");
  EXPECT_EQ(bad_input([&] { load(section("mnist"), 1, dir); }),
            "data file not found: " + (dir / "mnist" / "train-images-idx3-ubyte.gz").string() + " (nor " +
                (dir / "mnist" / "train-images-idx3-ubyte").string() +
                "); Debian has no MNIST package: put the four MNIST IDX files (gzip-compressed or not) in " +
                (dir / "mnist").string() + " or set /data/path");
  EXPECT_EQ(bad_input([&] { load(section("fashion-mnist", (dir / "x").string()), 1); }),
            "data file not found: " + (dir / "x" / "train-images-idx3-ubyte.gz").string() + " (nor " +
                (dir / "x" / "train-images-idx3-ubyte").string() + "); /data/path names the folder");
}

TEST_F(Load, Cifar10Folder) {
  for (int i = 1; i <= 5; ++i)
    write_file(dir / ("data_batch_" + std::to_string(i) + ".bin"), cifar_records({{static_cast<uint8_t>(i)}}));
  write_file(dir / "test_batch.bin", cifar_records({{0}, {9}}));
  const TrainTest t = load(section("cifar10", dir.string()), 1);
  EXPECT_EQ(t.train.labels, (std::vector<int32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(t.test.labels, (std::vector<int32_t>{0, 9}));
  EXPECT_EQ(t.norm.mean.size(), 3u);
  fs::remove(dir / "data_batch_4.bin");
  EXPECT_EQ(bad_input([&] { load(section("cifar10", dir.string()), 1); }),
            "data file not found: " + (dir / "data_batch_4.bin").string());
}

TEST_F(Load, Cifar100Folder) {
  write_file(dir / "train.bin", cifar_records({{1, 55}, {2, 66}}));
  write_file(dir / "test.bin", cifar_records({{3, 77}}));
  const TrainTest t = load(section("cifar100", dir.string()), 1);
  EXPECT_EQ(t.train.name, "cifar100");
  EXPECT_EQ(t.train.labels, (std::vector<int32_t>{55, 66}));
  EXPECT_EQ(t.test.labels, (std::vector<int32_t>{77}));
}

TEST_F(Load, BadValues) {
  EXPECT_EQ(bad_input([] { load(section("cifar10"), 1); }),
            "/data/path is required for cifar10: the folder with the files of the CIFAR binary version "
            "(data_batch_1.bin .. data_batch_5.bin, test_batch.bin)");
  EXPECT_EQ(bad_input([] { load(section("cifar100"), 1); }),
            "/data/path is required for cifar100: the folder with the files of the CIFAR binary version (train.bin, "
            "test.bin)");
  EXPECT_EQ(bad_input([] { load(section("imagenet"), 1); }),
            "/data/dataset: unknown data set \"imagenet\"; expected fashion-mnist, mnist, cifar10, cifar100 or "
            "synthetic");
  Json d = section("synthetic");
  d["synthetic"]["train_size"] = 0;
  EXPECT_EQ(bad_input([&] { load(d, 1); }), "/data/synthetic/train_size is 0, must be in [1, 2147483647]");
  d = section("synthetic");
  d["synthetic"]["height"] = 8;
  d["synthetic"]["train_size"] = 10;
  d["augment"]["random_crop_padding"] = 9;
  EXPECT_EQ(bad_input([&] { load(d, 1); }),
            "/data/augment/random_crop_padding is 9, more than the image size 8 of synthetic");
  d["augment"]["random_crop_padding"] = -1;
  EXPECT_EQ(bad_input([&] { load(d, 1); }),
            "/data/augment/random_crop_padding is -1, must be in [0, 2147483647]");
  d.erase("augment");
  EXPECT_EQ(bad_input([&] { load(d, 1); }), "missing config key /data/augment");
}

TEST_F(Load, TrainAndTestShapesMustAgree) {
  write_file(dir / "train-images-idx3-ubyte", idx_images(1, 4, 4, Bytes(16, 1)));
  write_file(dir / "train-labels-idx1-ubyte", idx_labels(1, {1}));
  write_file(dir / "t10k-images-idx3-ubyte", idx_images(1, 4, 5, Bytes(20, 1)));
  write_file(dir / "t10k-labels-idx1-ubyte", idx_labels(1, {1}));
  // Naming both files and where in them the sizes are (it named neither; a hunt).
  EXPECT_EQ(bad_input([&] { load(section("mnist", dir.string()), 1); }),
            "mnist: the training images in " + (dir / "train-images-idx3-ubyte").string() + " are 1x4x4 but the test "
            "images in " + (dir / "t10k-images-idx3-ubyte").string() + " are 1x4x5 (rows and columns: bytes 8-15 of "
            "each file's IDX content, decompressed where gzipped); both sets must have one image size");
}

}  // namespace
}  // namespace dtbench::data::test
