// IDX reader (the MNIST file format, http://yann.lecun.com/exdb/mnist/, "FILE FORMATS FOR THE MNIST
// DATABASE"). A file is a 4-byte magic number 0x0000TTDD (TT = 0x08 unsigned byte, DD = number of
// dimensions), then DD big-endian uint32 dimension sizes, then the data in row-major order. We accept
// images (0x00000803: N, rows, cols) and labels (0x00000801: N) and nothing after the data.
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "workloads/data/dataset.hpp"
#include "workloads/data/file_bytes.hpp"

namespace dtbench::data {

namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;

uint32_t big_endian_u32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::string to_string_u128(unsigned __int128 v) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v != 0);
  return s;
}

[[noreturn]] void truncated(const FileBytes& f, size_t at, const std::string& expected, const std::string& what) {
  throw BadInput(f.path.string() + ": truncated " + what + ": data ran out at " + f.offset(f.bytes.size()) +
                 ", expected " + expected + " bytes from " + f.offset(at));
}

// Throws unless bytes [at, at + count) exist; `what` names the part, e.g. "label data".
void need(const FileBytes& f, size_t at, size_t count, const std::string& what) {
  if (f.bytes.size() < at || f.bytes.size() - at < count) truncated(f, at, std::to_string(count), what);
}

void no_trailing_bytes(const FileBytes& f, size_t end, const std::string& what) {
  if (f.bytes.size() == end) return;
  throw BadInput(f.path.string() + ": " + std::to_string(f.bytes.size() - end) + " unexpected bytes after the " +
                 what + " at " + f.offset(end));
}

// Reads the magic number and `dims` dimension sizes.
std::vector<uint32_t> header(const FileBytes& f, uint32_t magic, const char* kind) {
  const size_t dims = magic & 0xff;
  need(f, 0, 4, "header");
  const uint32_t got = big_endian_u32(f.bytes.data());
  if (got != magic)
    throw BadInput(f.path.string() + ": wrong magic number " + hex32(got) + " at " + f.offset(0) + ", expected " +
                   hex32(magic) + " (IDX " + kind + ")");
  need(f, 0, 4 + 4 * dims, "header");
  std::vector<uint32_t> sizes(dims);
  for (size_t d = 0; d < dims; ++d) sizes[d] = big_endian_u32(f.bytes.data() + 4 + 4 * d);
  return sizes;
}

}  // namespace

Dataset read_idx(const std::filesystem::path& images, const std::filesystem::path& labels, int classes) {
  FileBytes fi = read_file_bytes(images);
  FileBytes fl = read_file_bytes(labels);
  return parse_idx(std::move(fi), std::move(fl), classes);
}

Dataset parse_idx(FileBytes fi, FileBytes fl, int classes) {
  const std::filesystem::path& images = fi.path;
  const std::filesystem::path& labels = fl.path;
  const std::vector<uint32_t> idim = header(fi, kImagesMagic, "unsigned-byte images, 3 dimensions");
  const std::vector<uint32_t> ldim = header(fl, kLabelsMagic, "unsigned-byte labels, 1 dimension");
  const size_t n = idim[0], rows = idim[1], cols = idim[2];
  if (rows == 0 || cols == 0 || rows > INT32_MAX || cols > INT32_MAX)
    throw BadInput(images.string() + ": image size " + std::to_string(rows) + "x" + std::to_string(cols) + " at " +
                   fi.offset(8) + " is not usable");
  if (ldim[0] != n)
    throw BadInput("image and label counts disagree: " + images.string() + " has " + std::to_string(n) +
                   " images (" + fi.offset(4) + ") but " + labels.string() + " has " + std::to_string(ldim[0]) +
                   " labels (" + fl.offset(4) + ")");

  const size_t image_start = 16, label_start = 8;
  const size_t image_bytes = rows * cols;  // each factor < 2^31: no overflow in 64 bits
  // Compare by division: n * image_bytes can overflow 64 bits for a corrupt header.
  if ((fi.bytes.size() - image_start) / image_bytes < n)
    truncated(fi, image_start, to_string_u128(static_cast<unsigned __int128>(n) * image_bytes),
              "image data (" + std::to_string(n) + " images of " + std::to_string(rows) + "x" + std::to_string(cols) +
                  ")");
  no_trailing_bytes(fi, image_start + n * image_bytes, "image data");
  need(fl, label_start, n, "label data (" + std::to_string(n) + " labels)");
  no_trailing_bytes(fl, label_start + n, "label data");

  Dataset ds;
  ds.channels = 1;
  ds.height = static_cast<int>(rows);
  ds.width = static_cast<int>(cols);
  ds.classes = classes;
  ds.labels.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t label = fl.bytes[label_start + i];
    if (label >= classes)
      throw BadInput(labels.string() + ": label " + std::to_string(label) + " of image " + std::to_string(i) +
                     " at " + fl.offset(label_start + i) + " is out of range [0, " + std::to_string(classes) + ")");
    ds.labels[i] = label;
  }
  // Reuse the file buffer: drop the header in place instead of copying 47 MB.
  ds.images = std::move(fi.bytes);
  ds.images.erase(ds.images.begin(), ds.images.begin() + static_cast<std::ptrdiff_t>(image_start));
  return ds;
}

}  // namespace dtbench::data
