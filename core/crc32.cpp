#include "core/crc32.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdio>

namespace dtbench {

uint32_t crc32_of(const char* data, size_t bytes, uint32_t before) {
  uLong crc = before;
  while (bytes > 0) {  // zlib's length is a uInt
    const uInt n = static_cast<uInt>(std::min<size_t>(bytes, uInt{1} << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), n);
    data += n;
    bytes -= n;
  }
  return static_cast<uint32_t>(crc);
}

std::string crc32_hex(uint32_t crc) {
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(crc));
  return hex;
}

std::string crc32_hex(const std::string& text) { return crc32_hex(crc32_of(text)); }

}  // namespace dtbench
