// zlib's CRC-32 of a byte string: what detects a damaged checkpoint file, or a file edited since it was recorded.
// A check against accidents, not against someone who means to forge a file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dtbench {

// `before`: the CRC of the bytes before these (0 for none), so that a CRC runs on over several buffers.
uint32_t crc32_of(const char* data, size_t bytes, uint32_t before = 0);
inline uint32_t crc32_of(const std::string& text) { return crc32_of(text.data(), text.size()); }
// As 8 lower-case hex digits, the form a JSON file records it in: of `text`, or a CRC already computed.
std::string crc32_hex(const std::string& text);
std::string crc32_hex(uint32_t crc);

}  // namespace dtbench
