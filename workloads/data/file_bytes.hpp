// Reading a whole data file into memory, decompressing it when it is gzip (internal to workloads/data and its
// fuzzers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dtbench::data {

struct FileBytes {
  std::filesystem::path path;
  bool gzip = false;           // bytes are the decompressed contents
  std::vector<uint8_t> bytes;  // the file's contents (decompressed when gzip)

  // "byte offset N" or, for gzip files, "byte offset N of the decompressed data".
  std::string offset(size_t at) const;
};

// Reads `path`; when it starts with the gzip magic bytes 1f 8b it is inflated with zlib (several
// concatenated gzip members are allowed, as gzip itself allows). Throws BadInput for a missing or
// unreadable file and for corrupt or truncated gzip data (with the compressed byte offset).
FileBytes read_file_bytes(const std::filesystem::path& path);
// The same on a file's contents already in memory (`path` names it in messages); read_file_bytes is this
// on the bytes it read, the fuzzers (fuzz/) call it directly.
FileBytes file_bytes(const std::filesystem::path& path, std::vector<uint8_t> raw);

}  // namespace dtbench::data
