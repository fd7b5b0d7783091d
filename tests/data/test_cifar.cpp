// CIFAR-10/100 binary reader: record layout, fine labels, concatenation of files, bad files.
#include <gtest/gtest.h>

#include "helpers.hpp"
#include "workloads/data/dataset.hpp"

namespace dtbench::data::test {
namespace {

using Cifar = TempDir;

TEST_F(Cifar, Cifar10RecordsInFileOrder) {
  write_file(dir / "a.bin", cifar_records({{3}, {9}}));
  write_file(dir / "b.bin", gzip(cifar_records({{0}})));  // gzip is detected here too
  const Dataset ds = read_cifar({dir / "a.bin", dir / "b.bin"}, 10);
  EXPECT_EQ(ds.name, "cifar10");
  EXPECT_EQ(ds.size(), 3u);
  EXPECT_EQ(ds.channels, 3);
  EXPECT_EQ(ds.height, 32);
  EXPECT_EQ(ds.width, 32);
  EXPECT_EQ(ds.labels, (std::vector<int32_t>{3, 9, 0}));
  ASSERT_EQ(ds.images.size(), 3u * 3072);
  // Record i pixel j was written as (7 i + j) mod 256; the third image is record 0 of b.bin.
  EXPECT_EQ(ds.image(0)[0], 0);
  EXPECT_EQ(ds.image(1)[0], 7);
  EXPECT_EQ(ds.image(1)[1024], (7 + 1024) % 256);  // first green pixel: channel planes are kept as stored
  EXPECT_EQ(ds.image(2)[3071], 3071 % 256);
}

TEST_F(Cifar, Cifar100UsesFineLabel) {
  write_file(dir / "train.bin", cifar_records({{19, 99}, {4, 30}, {0, 0}}));
  const Dataset ds = read_cifar({dir / "train.bin"}, 100);
  EXPECT_EQ(ds.name, "cifar100");
  EXPECT_EQ(ds.labels, (std::vector<int32_t>{99, 30, 0}));
  EXPECT_EQ(ds.image(1)[0], 7);  // the pixels start after both label bytes
}

TEST_F(Cifar, TruncatedRecord) {
  Bytes b = cifar_records({{1}, {2}});
  b.resize(3073 + 1000);
  write_file(dir / "d.bin", b);
  EXPECT_EQ(bad_input([&] { read_cifar({dir / "d.bin"}, 10); }),
            (dir / "d.bin").string() +
                ": truncated record 1: data ran out at byte offset 4073, expected 3073 bytes from byte offset 3073 "
                "(records are 3073 bytes)");
}

TEST_F(Cifar, LabelOutOfRange) {
  write_file(dir / "d.bin", cifar_records({{1}, {2}, {10}}));
  EXPECT_EQ(bad_input([&] { read_cifar({dir / "d.bin"}, 10); }),
            (dir / "d.bin").string() + ": label 10 of record 2 at byte offset 6146 is out of range [0, 10)");
  write_file(dir / "e.bin", cifar_records({{1, 2}, {20, 5}}));
  EXPECT_EQ(bad_input([&] { read_cifar({dir / "e.bin"}, 100); }),
            (dir / "e.bin").string() + ": coarse label 20 of record 1 at byte offset 3074 is out of range [0, 20)");
  write_file(dir / "f.bin", cifar_records({{1, 100}}));
  EXPECT_EQ(bad_input([&] { read_cifar({dir / "f.bin"}, 100); }),
            (dir / "f.bin").string() + ": label 100 of record 0 at byte offset 1 is out of range [0, 100)");
}

TEST_F(Cifar, EmptyAndMissingFiles) {
  write_file(dir / "empty.bin", {});
  EXPECT_EQ(bad_input([&] { read_cifar({dir / "empty.bin"}, 10); }),
            (dir / "empty.bin").string() + ": empty file, expected records of 3073 bytes");
  EXPECT_EQ(bad_input([&] { read_cifar({dir / "none.bin"}, 10); }), "data file not found: " + (dir / "none.bin").string());
  EXPECT_EQ(bad_input([&] { read_cifar({dir / "none.bin"}, 7); }), "CIFAR has 10 or 100 classes, not 7");
}

}  // namespace
}  // namespace dtbench::data::test
