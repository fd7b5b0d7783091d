// Image classification data sets held in memory as uint8 pixels, and their readers.
//
// Every data set is a flat array of N images, each C x H x W bytes in channel-major (CHW) order, plus
// one int32 label per image in [0, classes). Readers validate the whole file and throw dtbench::BadInput
// naming the file and the byte offset of what was wrong. For gzip-compressed files the offsets count
// bytes of the decompressed data (the IDX/CIFAR layout), except for corrupt-gzip errors, which give the
// offset in the compressed file.
//
// Formats:
//  - IDX (LeCun's MNIST format, also Fashion-MNIST): a big-endian header, magic 0x00000803 for images
//    (N, rows, cols as uint32) and 0x00000801 for labels (N), then the raw unsigned bytes. Files may be
//    gzip-compressed (as Debian ships them) or not; gzip is recognised by its magic bytes 1f 8b.
//  - CIFAR binary (Krizhevsky 2009, "Learning multiple layers of features from tiny images"): fixed-size
//    records with no header. CIFAR-10: 1 label byte + 3072 pixel bytes (1024 red, 1024 green, 1024 blue,
//    rows of 32); CIFAR-100: coarse label byte + fine label byte + 3072 pixel bytes; we use the fine label.
//  - Synthetic: seeded, any shape, with learnable class structure (see make_synthetic).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "workloads/data/batch.hpp"

namespace dtbench::data {

struct Dataset {
  std::string name;
  int channels = 0, height = 0, width = 0, classes = 0;
  std::vector<uint8_t> images;  // size() * image_bytes() bytes, image-major, each image CHW
  std::vector<int32_t> labels;  // one per image, in [0, classes)

  size_t size() const { return labels.size(); }
  size_t image_bytes() const {
    return static_cast<size_t>(channels) * static_cast<size_t>(height) * static_cast<size_t>(width);
  }
  const uint8_t* image(size_t i) const { return images.data() + i * image_bytes(); }
};

// Reads an IDX image file and its IDX label file (each gzip-compressed or not). Labels must lie in
// [0, classes). The result has channels = 1 and an empty name (load() names it).
Dataset read_idx(const std::filesystem::path& images, const std::filesystem::path& labels, int classes);

// Reads CIFAR binary files (concatenated in the order given). classes is 10 (CIFAR-10 records) or 100
// (CIFAR-100 records, fine label). Shape 3 x 32 x 32.
Dataset read_cifar(const std::vector<std::filesystem::path>& files, int classes);

// The two readers on files already in memory (workloads/data/file_bytes.hpp), as parse_json is to
// read_json_file: the readers above are these on the files' bytes, and the fuzzers (fuzz/) call them directly.
struct FileBytes;
Dataset parse_idx(FileBytes images, FileBytes labels, int classes);
Dataset parse_cifar(const std::vector<FileBytes>& files, int classes);

// A synthetic data set of n images of shape c x h x w with labels i mod classes (balanced). Each class
// has a smooth prototype image (a sum of a few low-frequency cosine waves per channel, so it survives
// small crops and shifts); a sample is its class prototype plus independent Gaussian pixel noise,
// rounded and clamped to [0, 255]. Prototypes depend only on (seed, shape, classes), so the train and
// test splits share them; the noise depends on (seed, split, sample index), so splits differ.
Dataset make_synthetic(int c, int h, int w, int classes, size_t n, uint64_t seed, bool test_split);

struct TrainTest {
  Dataset train, test;
  Normalization norm;      // from the training set when /data/normalize is true, else identity (x / 255)
  AugmentOptions augment;  // for training batches; evaluation uses AugmentOptions{} (none)
  std::vector<std::filesystem::path> files;  // the files read (none for synthetic data): no output may replace one
};

// Loads the data set described by the resolved "/data" config section:
//   {"dataset": "fashion-mnist"|"mnist"|"cifar10"|"cifar100"|"synthetic", "path": "",
//    "normalize": true, "augment": {"random_crop_padding": 0, "horizontal_flip": false},
//    "synthetic": {"channels", "height", "width", "classes", "train_size", "test_size"}}
// An empty path means <default_root>/fashion-mnist or <default_root>/mnist (IDX files named
// {train,t10k}-{images-idx3,labels-idx1}-ubyte, with or without .gz); cifar10 and cifar100 need a path:
// the folder with data_batch_1.bin .. data_batch_5.bin and test_batch.bin (CIFAR-10), or train.bin and
// test.bin (CIFAR-100). The seed only affects the synthetic data set. default_root exists so tests and
// unusual installations can point elsewhere.
TrainTest load(const Json& data_section, uint64_t seed,
               const std::filesystem::path& default_root = "/usr/share/datasets");

// Stream ids for Rng(seed, {stream, ...}). They are part of what makes a run a function of its seed:
// changing one changes every run's data order, augmentation or synthetic data.
namespace stream {
inline constexpr uint64_t shuffle = 0x64617461'73687566ULL;          // "datashuf": (epoch)
inline constexpr uint64_t augment = 0x64617461'61756720ULL;          // "dataaug ": (epoch, sample)
inline constexpr uint64_t synthetic_proto = 0x73796e74'70726f74ULL;  // "synt"+"prot": (class, channel)
inline constexpr uint64_t synthetic_noise = 0x73796e74'6e6f6973ULL;  // "synt"+"nois": (split, sample)
}  // namespace stream

}  // namespace dtbench::data
