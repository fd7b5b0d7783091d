#include "workloads/data/file_bytes.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <new>
#include <utility>

#include "core/error.hpp"
#include "core/regular_file.hpp"

namespace dtbench::data {

namespace fs = std::filesystem;

std::string FileBytes::offset(size_t at) const {
  return "byte offset " + std::to_string(at) + (gzip ? " of the decompressed data" : "");
}

namespace {

// The largest data file, compressed or not, that a run may hold in memory.
constexpr uint64_t kMaxDataBytes = uint64_t{16} << 30;

std::vector<uint8_t> read_raw(const fs::path& path) {
  const std::string text = read_regular_file(path, kMaxDataBytes, "data file");
  return std::vector<uint8_t>(text.begin(), text.end());
}

bool is_gzip(const std::vector<uint8_t>& raw, size_t at) {
  return raw.size() >= at + 2 && raw[at] == 0x1f && raw[at + 1] == 0x8b;
}

// Inflates gzip members one after another until the input ends. zlib's avail_in/avail_out are 32-bit,
// so the input and output are fed in chunks of at most 1 GiB.
std::vector<uint8_t> gunzip(const std::vector<uint8_t>& raw, const fs::path& path) {
  constexpr size_t kChunk = size_t{1} << 30;
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw std::bad_alloc();
  struct End {
    z_stream* zs;
    ~End() { inflateEnd(zs); }
  } end{&zs};

  // The gzip trailer's ISIZE (uncompressed size mod 2^32) is a good first guess of the output size, but
  // only a guess: it is written by whoever made the file. Deflate expands at most 1032:1, so no more is
  // allocated than the compressed bytes can produce, and the output may never outgrow a data file's limit.
  const size_t most = std::min<uint64_t>(raw.size() * uint64_t{1032} + 1024, kMaxDataBytes);
  size_t guess = raw.size() * 4;
  if (raw.size() >= 18) {
    const uint8_t* t = raw.data() + raw.size() - 4;
    guess = std::max<size_t>(uint32_t{t[0]} | uint32_t{t[1]} << 8 | uint32_t{t[2]} << 16 | uint32_t{t[3]} << 24, 1);
  }
  guess = std::min(guess, most);
  std::vector<uint8_t> out(guess);
  size_t in_pos = 0, out_pos = 0;
  for (;;) {
    if (out_pos == out.size()) {
      if (out.size() >= kMaxDataBytes)
        throw BadInput(path.string() + ": gzip data decompresses to more than " + std::to_string(kMaxDataBytes) +
                       " bytes, more than a data file may have");
      out.resize(std::min<uint64_t>(out.size() * 2, kMaxDataBytes));
    }
    zs.next_in = const_cast<Bytef*>(raw.data() + in_pos);
    zs.avail_in = static_cast<uInt>(std::min(raw.size() - in_pos, kChunk));
    zs.next_out = out.data() + out_pos;
    zs.avail_out = static_cast<uInt>(std::min(out.size() - out_pos, kChunk));
    const int rc = inflate(&zs, Z_NO_FLUSH);
    in_pos = static_cast<size_t>(zs.next_in - raw.data());
    out_pos = static_cast<size_t>(zs.next_out - out.data());
    if (rc == Z_OK) continue;
    if (rc == Z_STREAM_END) {
      if (in_pos == raw.size()) break;
      // Zero bytes padding the file to a block (tapes, some archivers) end it, as GNU gzip ignores them.
      if (std::all_of(raw.begin() + static_cast<std::ptrdiff_t>(in_pos), raw.end(), [](uint8_t b) { return b == 0; }))
        break;
      if (!is_gzip(raw, in_pos))
        throw BadInput(path.string() + ": corrupt gzip: " + std::to_string(raw.size() - in_pos) +
                       " bytes of trailing garbage after the gzip stream at compressed byte offset " +
                       std::to_string(in_pos));
      inflateReset(&zs);  // another gzip member follows
      continue;
    }
    if (rc == Z_BUF_ERROR && in_pos == raw.size())
      throw BadInput(path.string() + ": corrupt gzip: the compressed data ends at byte offset " +
                     std::to_string(in_pos) + " before the end of the gzip stream (truncated file?)");
    if (rc == Z_BUF_ERROR) continue;
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    throw BadInput(path.string() + ": corrupt gzip near compressed byte offset " + std::to_string(in_pos) +
                   ": " + (zs.msg ? zs.msg : "inflate error " + std::to_string(rc)));
  }
  out.resize(out_pos);
  out.shrink_to_fit();
  return out;
}

}  // namespace

FileBytes file_bytes(const fs::path& path, std::vector<uint8_t> raw) {
  FileBytes f;
  f.path = path;
  f.bytes = std::move(raw);
  if (is_gzip(f.bytes, 0)) {
    f.gzip = true;
    f.bytes = gunzip(f.bytes, path);
  }
  return f;
}

FileBytes read_file_bytes(const fs::path& path) { return file_bytes(path, read_raw(path)); }

}  // namespace dtbench::data
