// IDX reader: valid files (plain, gzip, multi-member gzip) and every kind of bad file, with the exact
// message (file name and byte offset).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "helpers.hpp"
#include "workloads/data/dataset.hpp"

namespace dtbench::data::test {
namespace {

// 5 images of 3 rows x 4 columns; pixel j of image i is 12 i + j (so every byte is distinct).
constexpr uint32_t kN = 5, kRows = 3, kCols = 4;
Bytes pixels(size_t count = kN * kRows * kCols) {
  Bytes p(count);
  for (size_t j = 0; j < count; ++j) p[j] = static_cast<uint8_t>(j);
  return p;
}
const Bytes kLabels = {3, 0, 9, 1, 4};

class Idx : public TempDir {
 protected:
  fs::path images() const { return dir / "images"; }
  fs::path labels() const { return dir / "labels"; }
  void write(const Bytes& img, const Bytes& lab) {
    write_file(images(), img);
    write_file(labels(), lab);
  }
  void write_valid() { write(idx_images(kN, kRows, kCols, pixels()), idx_labels(kN, kLabels)); }
};

void expect_small_set(const Dataset& ds) {
  EXPECT_EQ(ds.size(), kN);
  EXPECT_EQ(ds.channels, 1);
  EXPECT_EQ(ds.height, 3);
  EXPECT_EQ(ds.width, 4);
  EXPECT_EQ(ds.classes, 10);
  EXPECT_EQ(ds.image_bytes(), 12u);
  EXPECT_EQ(ds.images, pixels());
  EXPECT_EQ(ds.labels, (std::vector<int32_t>{3, 0, 9, 1, 4}));
  EXPECT_EQ(ds.image(2)[0], 24);  // image 2 starts at pixel 2 * 12
}

TEST_F(Idx, ReadsPlainFiles) {
  write_valid();
  expect_small_set(read_idx(images(), labels(), 10));
}

TEST_F(Idx, ReadsGzipFilesDetectedByMagicNotName) {
  // Names without .gz: the reader must look at the bytes 1f 8b, not the file name.
  write(gzip(idx_images(kN, kRows, kCols, pixels())), gzip(idx_labels(kN, kLabels)));
  EXPECT_EQ(read_whole(images())[0], 0x1f);
  expect_small_set(read_idx(images(), labels(), 10));
}

TEST_F(Idx, ReadsConcatenatedGzipMembers) {
  // gzip -c a >f; gzip -c b >>f decompresses to a + b; so must we.
  const Bytes whole = idx_images(kN, kRows, kCols, pixels());
  Bytes first(whole.begin(), whole.begin() + 20), second(whole.begin() + 20, whole.end());
  Bytes two = gzip(first);
  const Bytes g2 = gzip(second);
  two.insert(two.end(), g2.begin(), g2.end());
  write(two, idx_labels(kN, kLabels));
  expect_small_set(read_idx(images(), labels(), 10));
}

TEST_F(Idx, WrongMagicNumber) {
  write(idx_images(kN, kRows, kCols, pixels(), 0x801), idx_labels(kN, kLabels));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            images().string() +
                ": wrong magic number 0x00000801 at byte offset 0, expected 0x00000803 (IDX unsigned-byte images, 3 "
                "dimensions)");
  // Swapped files: the labels file is given where images are expected.
  write(idx_images(kN, kRows, kCols, pixels()), idx_labels(kN, kLabels));
  EXPECT_EQ(bad_input([&] { read_idx(labels(), images(), 10); }),
            labels().string() +
                ": wrong magic number 0x00000801 at byte offset 0, expected 0x00000803 (IDX unsigned-byte images, 3 "
                "dimensions)");
  write(idx_images(kN, kRows, kCols, pixels()), idx_labels(kN, kLabels, 0x08010000));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            labels().string() +
                ": wrong magic number 0x08010000 at byte offset 0, expected 0x00000801 (IDX unsigned-byte labels, 1 "
                "dimension)");
}

TEST_F(Idx, TruncatedHeader) {
  Bytes img = idx_images(kN, kRows, kCols, {});
  img.resize(10);
  write(img, idx_labels(kN, kLabels));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            images().string() + ": truncated header: data ran out at byte offset 10, expected 16 bytes from byte offset 0");
}

TEST_F(Idx, TruncatedImages) {
  // 60 pixel bytes are due after the 16-byte header; only 50 are there.
  write(idx_images(kN, kRows, kCols, pixels(50)), idx_labels(kN, kLabels));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            images().string() +
                ": truncated image data (5 images of 3x4): data ran out at byte offset 66, expected 60 bytes from byte "
                "offset 16");
  // The same file gzip-compressed: offsets count decompressed bytes and say so.
  write(gzip(idx_images(kN, kRows, kCols, pixels(50))), idx_labels(kN, kLabels));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            images().string() +
                ": truncated image data (5 images of 3x4): data ran out at byte offset 66 of the decompressed data, "
                "expected 60 bytes from byte offset 16 of the decompressed data");
}

TEST_F(Idx, AbsurdImageCountIsTruncationNotOverflow) {
  // (2^32 - 1) images of (2^31 - 1) x (2^31 - 1) pixels: the byte count overflows 64 bits; the message
  // must still state it exactly (computed with Python: (2**31-1)**2 * (2**32-1)).
  write(idx_images(0xffffffffu, 2147483647u, 2147483647u, pixels()), idx_labels(0xffffffffu, {}));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            images().string() +
                ": truncated image data (4294967295 images of 2147483647x2147483647): data ran out at byte offset 76, "
                "expected 19807040605507654314838982655 bytes from byte offset 16");
}

TEST_F(Idx, TrailingBytes) {
  Bytes img = idx_images(kN, kRows, kCols, pixels());
  img.push_back(7);
  img.push_back(7);
  write(img, idx_labels(kN, kLabels));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            images().string() + ": 2 unexpected bytes after the image data at byte offset 76");
}

TEST_F(Idx, TruncatedLabels) {
  write(idx_images(kN, kRows, kCols, pixels()), idx_labels(kN, {3, 0, 9}));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            labels().string() +
                ": truncated label data (5 labels): data ran out at byte offset 11, expected 5 bytes from byte offset 8");
}

TEST_F(Idx, LabelOutOfRange) {
  write(idx_images(kN, kRows, kCols, pixels()), idx_labels(kN, {3, 0, 9, 10, 4}));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            labels().string() + ": label 10 of image 3 at byte offset 11 is out of range [0, 10)");
  // The same labels are fine with more classes.
  EXPECT_EQ(read_idx(images(), labels(), 11).labels[3], 10);
}

TEST_F(Idx, CountMismatch) {
  write(idx_images(kN, kRows, kCols, pixels()), idx_labels(4, {3, 0, 9, 1}));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            "image and label counts disagree: " + images().string() + " has 5 images (byte offset 4) but " +
                labels().string() + " has 4 labels (byte offset 4)");
}

TEST_F(Idx, MissingFile) {
  write_file(labels(), idx_labels(kN, kLabels));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }), "data file not found: " + images().string());
}

TEST_F(Idx, CorruptGzipBadCrc) {
  // Flip the CRC-32 in the gzip trailer (the last 8 bytes are CRC-32 and ISIZE): the deflate data is
  // fine, so zlib detects it only at the check, after reading the 4 CRC bytes.
  Bytes g = gzip(idx_images(kN, kRows, kCols, pixels()));
  g[g.size() - 8] ^= 0xff;
  write(g, idx_labels(kN, kLabels));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            images().string() + ": corrupt gzip near compressed byte offset " + std::to_string(g.size() - 4) +
                ": incorrect data check");
}

TEST_F(Idx, CorruptGzipBadDeflateData) {
  // Byte 10 is the first deflate byte after the 10-byte gzip header; 0xff makes it a block of the
  // reserved type 3.
  Bytes g = gzip(idx_images(kN, kRows, kCols, pixels()));
  g[10] = 0xff;
  write(g, idx_labels(kN, kLabels));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            images().string() + ": corrupt gzip near compressed byte offset 11: invalid block type");
}

TEST_F(Idx, TruncatedGzip) {
  Bytes g = gzip(idx_images(kN, kRows, kCols, pixels()));
  g.resize(g.size() / 2);
  write(g, idx_labels(kN, kLabels));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            images().string() + ": corrupt gzip: the compressed data ends at byte offset " + std::to_string(g.size()) +
                " before the end of the gzip stream (truncated file?)");
}

TEST_F(Idx, GarbageAfterGzip) {
  Bytes g = gzip(idx_images(kN, kRows, kCols, pixels()));
  const size_t end = g.size();
  g.insert(g.end(), {1, 2, 3});
  write(g, idx_labels(kN, kLabels));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            images().string() + ": corrupt gzip: 3 bytes of trailing garbage after the gzip stream at compressed byte "
                                "offset " + std::to_string(end));
}

TEST_F(Idx, ZeroPaddingAfterGzipIsIgnoredAsGnuGzipDoes) {
  // `gzip -t` and Python's gzip accept a stream padded with zero bytes (to a tape or archive block); it was refused
  // as trailing garbage. A nonzero byte after the zeros is still garbage.
  Bytes g = gzip(idx_images(kN, kRows, kCols, pixels()));
  const size_t end = g.size();
  g.insert(g.end(), 512 - end % 512, 0);
  write(g, idx_labels(kN, kLabels));
  expect_small_set(read_idx(images(), labels(), 10));
  g.push_back(7);
  write(g, idx_labels(kN, kLabels));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            images().string() + ": corrupt gzip: " + std::to_string(g.size() - end) +
                " bytes of trailing garbage after the gzip stream at compressed byte offset " + std::to_string(end));
}

TEST_F(Idx, ForgedGzipSizeIsNotBelieved) {
  // The trailer's ISIZE claims 4 GiB - 16; the reader may not allocate what the trailer says before the data
  // proves it (deflate expands at most 1032:1): the length check fails after a small allocation. The peak
  // memory is not observable here; the message shows the whole stream was inflated and checked.
  Bytes g = gzip(idx_images(kN, kRows, kCols, pixels()));
  const uint32_t forged = 0xfffffff0u;
  for (int i = 0; i < 4; ++i) g[g.size() - 4 + i] = static_cast<uint8_t>(forged >> (8 * i));
  write(g, idx_labels(kN, kLabels));
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            images().string() + ": corrupt gzip near compressed byte offset " + std::to_string(g.size()) +
                ": incorrect length check");
}

TEST_F(Idx, OnlyRegularFilesAreRead) {
  // A FIFO would block a reader forever waiting for a writer; a folder is not a file either.
  write_file(labels(), idx_labels(kN, kLabels));
  ASSERT_EQ(::mkfifo(images().c_str(), 0644), 0);
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }),
            images().string() + ": data file is not a regular file (a FIFO, device or socket)");
  fs::remove(images());
  fs::create_directory(images());
  EXPECT_EQ(bad_input([&] { read_idx(images(), labels(), 10); }), "data file " + images().string() + " is a directory");
}

}  // namespace
}  // namespace dtbench::data::test
