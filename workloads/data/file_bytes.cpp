#include "workloads/data/file_bytes.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <new>

#include "core/error.hpp"

namespace dtbench::data {

namespace fs = std::filesystem;

std::string FileBytes::offset(size_t at) const {
  return "byte offset " + std::to_string(at) + (gzip ? " of the decompressed data" : "");
}

namespace {

std::vector<uint8_t> read_raw(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw BadInput("data file not found: " + path.string());
  if (fs::is_directory(path, ec)) throw BadInput("data file " + path.string() + " is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadInput("cannot open data file " + path.string() + ": " + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  std::vector<uint8_t> raw(static_cast<size_t>(std::max<std::streamoff>(size, 0)));
  in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
  if (static_cast<size_t>(in.gcount()) != raw.size())
    throw BadInput("cannot read data file " + path.string() + ": read " + std::to_string(in.gcount()) +
                   " of " + std::to_string(raw.size()) + " bytes");
  return raw;
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

  // The gzip trailer's ISIZE (uncompressed size mod 2^32) is a good first guess of the output size.
  size_t guess = raw.size() * 4;
  if (raw.size() >= 18) {
    const uint8_t* t = raw.data() + raw.size() - 4;
    guess = std::max<size_t>(uint32_t{t[0]} | uint32_t{t[1]} << 8 | uint32_t{t[2]} << 16 | uint32_t{t[3]} << 24, 1);
  }
  std::vector<uint8_t> out(guess);
  size_t in_pos = 0, out_pos = 0;
  for (;;) {
    if (out_pos == out.size()) out.resize(out.size() * 2);
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

FileBytes read_file_bytes(const fs::path& path) {
  FileBytes f;
  f.path = path;
  f.bytes = read_raw(path);
  if (is_gzip(f.bytes, 0)) {
    f.gzip = true;
    f.bytes = gunzip(f.bytes, path);
  }
  return f;
}

}  // namespace dtbench::data
