// CIFAR-10/100 binary reader (https://www.cs.toronto.edu/~kriz/cifar.html, "Binary version").
// Files are headerless sequences of fixed-size records: CIFAR-10 <label><3072 pixels>, CIFAR-100
// <coarse label><fine label><3072 pixels>; pixels are the 32x32 red plane, then green, then blue, each
// row-major, which is already the CHW layout we keep.
#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "workloads/data/dataset.hpp"
#include "workloads/data/file_bytes.hpp"

namespace dtbench::data {

namespace {
constexpr size_t kImageBytes = 3 * 32 * 32;
constexpr int kCoarseClasses = 20;  // CIFAR-100 superclasses

void check_label(const FileBytes& f, size_t record, size_t at, int classes, const char* which) {
  const int label = f.bytes[at];
  if (label < classes) return;
  throw BadInput(f.path.string() + ": " + which + std::to_string(label) + " of record " + std::to_string(record) +
                 " at " + f.offset(at) + " is out of range [0, " + std::to_string(classes) + ")");
}

// An empty CIFAR data set of `classes` classes.
Dataset cifar(int classes) {
  if (classes != 10 && classes != 100)
    throw BadInput("CIFAR has 10 or 100 classes, not " + std::to_string(classes));
  Dataset ds;
  ds.name = classes == 10 ? "cifar10" : "cifar100";
  ds.channels = 3;
  ds.height = 32;
  ds.width = 32;
  ds.classes = classes;
  return ds;
}

// Appends the records of one file to `ds`.
void append_records(Dataset& ds, const FileBytes& f) {
  const std::filesystem::path& path = f.path;
  const int classes = ds.classes;
  const size_t label_bytes = classes == 10 ? 1 : 2;
  const size_t record = label_bytes + kImageBytes;
  const size_t n = f.bytes.size() / record;
  if (f.bytes.empty())
    throw BadInput(path.string() + ": empty file, expected records of " + std::to_string(record) + " bytes");
  if (f.bytes.size() % record != 0)
    throw BadInput(path.string() + ": truncated record " + std::to_string(n) + ": data ran out at " +
                   f.offset(f.bytes.size()) + ", expected " + std::to_string(record) + " bytes from " +
                   f.offset(n * record) + " (records are " + std::to_string(record) + " bytes)");
  const size_t first = ds.labels.size();
  ds.labels.resize(first + n);
  ds.images.resize((first + n) * kImageBytes);
  for (size_t i = 0; i < n; ++i) {
    const size_t at = i * record;
    if (classes == 100) check_label(f, i, at, kCoarseClasses, "coarse label ");
    check_label(f, i, at + label_bytes - 1, classes, "label ");
    ds.labels[first + i] = f.bytes[at + label_bytes - 1];
    std::copy_n(f.bytes.data() + at + label_bytes, kImageBytes, ds.images.data() + (first + i) * kImageBytes);
  }
}
}  // namespace

Dataset read_cifar(const std::vector<std::filesystem::path>& files, int classes) {
  Dataset ds = cifar(classes);
  for (const auto& path : files) append_records(ds, read_file_bytes(path));  // one file in memory at a time
  return ds;
}

Dataset parse_cifar(const std::vector<FileBytes>& files, int classes) {
  Dataset ds = cifar(classes);
  for (const auto& f : files) append_records(ds, f);
  return ds;
}

}  // namespace dtbench::data
