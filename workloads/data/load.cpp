// From the resolved "/data" config section to train and test sets, normalisation and augmentation.
// Types are validated by the config module; here we check values that depend on the data (sizes,
// padding against the image size) and that the files exist and are well formed.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "workloads/data/dataset.hpp"

namespace dtbench::data {

namespace fs = std::filesystem;

namespace {

const Json& member(const Json& j, const char* key, const std::string& pointer) {
  if (!j.is_object() || !j.contains(key)) throw BadInput("missing config key " + pointer);
  return j.at(key);
}

// An integer config value in [min, max].
int64_t in_range(const Json& j, const char* key, const std::string& parent, int64_t min, int64_t max = INT32_MAX) {
  const std::string pointer = parent + "/" + key;
  const int64_t v = member(j, key, pointer).get<int64_t>();
  if (v < min || v > max)
    throw BadInput(pointer + " is " + std::to_string(v) + ", must be in [" + std::to_string(min) + ", " +
                   std::to_string(max) + "]");
  return v;
}

// An IDX file as named by the MNIST distribution, gzip-compressed (Debian) or not.
fs::path idx_file(const fs::path& dir, const std::string& base, const std::string& hint) {
  const fs::path gz = dir / (base + ".gz"), plain = dir / base;
  std::error_code ec;
  // The name itself, a link included: a link to nothing or a loop of links is that file's error when it is read,
  // not a reason to take the other file silently.
  if (fs::exists(fs::symlink_status(gz, ec))) return gz;
  if (fs::exists(fs::symlink_status(plain, ec))) return plain;
  throw BadInput("data file not found: " + gz.string() + " (nor " + plain.string() + ")" + hint);
}

TrainTest load_idx(const std::string& name, const std::string& path, const fs::path& default_root) {
  const fs::path dir = path.empty() ? default_root / name : fs::path(path);
  std::string hint = "; /data/path names the folder";
  if (path.empty() && name == "fashion-mnist")
    hint = "; install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist) or set /data/path";
  else if (path.empty())
    hint = "; Debian has no MNIST package: put the four MNIST IDX files (gzip-compressed or not) in " + dir.string() +
           " or set /data/path";
  // Resolve all four names first (in this order) so a missing file is reported before any reading.
  const fs::path train_images = idx_file(dir, "train-images-idx3-ubyte", hint);
  const fs::path train_labels = idx_file(dir, "train-labels-idx1-ubyte", hint);
  const fs::path test_images = idx_file(dir, "t10k-images-idx3-ubyte", hint);
  const fs::path test_labels = idx_file(dir, "t10k-labels-idx1-ubyte", hint);
  TrainTest d;
  d.files = {train_images, train_labels, test_images, test_labels};
  d.train = read_idx(train_images, train_labels, 10);
  d.test = read_idx(test_images, test_labels, 10);
  // Files of 0 images are well-formed IDX, but a run needs images to train on and a test set to evaluate (an empty
  // one gave a NaN accuracy and a record with none).
  if (d.train.size() == 0) throw BadInput(train_images.string() + ": holds no images (a run needs some to train on)");
  if (d.test.size() == 0) throw BadInput(test_images.string() + ": holds no images (a run evaluates on the test set)");
  return d;
}

TrainTest load_cifar(const std::string& name, const std::string& path) {
  const int classes = name == "cifar10" ? 10 : 100;
  if (path.empty())
    throw BadInput("/data/path is required for " + name + ": the folder with the files of the CIFAR binary version (" +
                   (classes == 10 ? "data_batch_1.bin .. data_batch_5.bin, test_batch.bin" : "train.bin, test.bin") + ")");
  const fs::path dir(path);
  TrainTest d;
  if (classes == 10) {
    std::vector<fs::path> train;
    for (int i = 1; i <= 5; ++i) train.push_back(dir / ("data_batch_" + std::to_string(i) + ".bin"));
    d.train = read_cifar(train, 10);
    d.test = read_cifar({dir / "test_batch.bin"}, 10);
    d.files = train;
    d.files.push_back(dir / "test_batch.bin");
  } else {
    d.train = read_cifar({dir / "train.bin"}, 100);
    d.test = read_cifar({dir / "test.bin"}, 100);
    d.files = {dir / "train.bin", dir / "test.bin"};
  }
  return d;
}

TrainTest load_synthetic(const Json& data, uint64_t seed) {
  const Json& s = member(data, "synthetic", "/data/synthetic");
  const std::string p = "/data/synthetic";
  const int c = static_cast<int>(in_range(s, "channels", p, 1));
  const int h = static_cast<int>(in_range(s, "height", p, 1));
  const int w = static_cast<int>(in_range(s, "width", p, 1));
  const int classes = static_cast<int>(in_range(s, "classes", p, 1));
  const size_t train = static_cast<size_t>(in_range(s, "train_size", p, 1));
  const size_t test = static_cast<size_t>(in_range(s, "test_size", p, 1));
  // The data set's own seed where one is given: runs of other seeds, such as population members that continue each
  // other's checkpoints, then train and evaluate on the same images (each drew its own set; a hunt).
  if (s.contains("seed") && s["seed"].is_number_integer() && s["seed"].get<int64_t>() >= 0)
    seed = static_cast<uint64_t>(s["seed"].get<int64_t>());
  TrainTest d;
  d.train = make_synthetic(c, h, w, classes, train, seed, false);
  d.test = make_synthetic(c, h, w, classes, test, seed, true);
  return d;
}

}  // namespace

TrainTest load(const Json& data, uint64_t seed, const fs::path& default_root) {
  const std::string name = member(data, "dataset", "/data/dataset").get<std::string>();
  const std::string path = data.contains("path") ? data.at("path").get<std::string>() : "";
  const bool normalize = member(data, "normalize", "/data/normalize").get<bool>();
  const Json& aug = member(data, "augment", "/data/augment");

  TrainTest d;  // each loader names the files it reads in d.files
  if (name == "fashion-mnist" || name == "mnist") {
    d = load_idx(name, path, default_root);
  } else if (name == "cifar10" || name == "cifar100") {
    d = load_cifar(name, path);
  } else if (name == "synthetic") {
    d = load_synthetic(data, seed);
  } else {
    throw BadInput("/data/dataset: unknown data set \"" + name +
                   "\"; expected fashion-mnist, mnist, cifar10, cifar100 or synthetic");
  }
  d.train.name = d.test.name = name;

  // Only IDX files can differ (CIFAR's records and synthetic images have one size): their sizes are bytes 8-15 of
  // each images file (of its decompressed bytes when gzipped), which the message names (it named no file; a hunt).
  if (d.train.channels != d.test.channels || d.train.height != d.test.height || d.train.width != d.test.width) {
    const auto size = [](const Dataset& s) {
      return std::to_string(s.channels) + "x" + std::to_string(s.height) + "x" + std::to_string(s.width);
    };
    const bool idx = name == "fashion-mnist" || name == "mnist";  // d.files: images, labels, test images, labels
    throw BadInput(name + ": the training images" + (idx ? " in " + d.files[0].string() : std::string()) + " are " +
                   size(d.train) + " but the test images" + (idx ? " in " + d.files[2].string() : std::string()) +
                   " are " + size(d.test) + (idx ? " (rows and columns: bytes 8-15 of each file's IDX content, decompressed where gzipped)" : "") +
                   "; both sets must have one image size");
  }

  const int64_t pad = in_range(aug, "random_crop_padding", "/data/augment", 0);
  const int max_pad = std::min(d.train.height, d.train.width);
  if (pad > max_pad)
    throw BadInput("/data/augment/random_crop_padding is " + std::to_string(pad) + ", more than the image size " +
                   std::to_string(max_pad) + " of " + name);
  d.augment.random_crop_padding = static_cast<int>(pad);
  d.augment.horizontal_flip = member(aug, "horizontal_flip", "/data/augment/horizontal_flip").get<bool>();
  d.norm = normalize ? channel_stats(d.train) : identity_normalization(d.train.channels);
  return d;
}

}  // namespace dtbench::data
