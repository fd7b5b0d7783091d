#include "fuzz/fuzz_input.hpp"

#include <stdlib.h>

#include <cstdlib>
#include <string_view>

namespace dtbench::fuzz {

std::vector<std::string> split(const uint8_t* data, size_t size, size_t max_parts) {
  const std::string_view text(reinterpret_cast<const char*>(data), size), sep(kSeparator);
  std::vector<std::string> parts;
  size_t start = 0;
  while (parts.size() + 1 < max_parts) {
    const size_t at = text.find(sep, start);
    if (at == std::string_view::npos) break;
    parts.emplace_back(text.substr(start, at - start));
    start = at + sep.size();
  }
  parts.emplace_back(text.substr(start));
  return parts;
}

namespace {
std::filesystem::path made;
void remove_scratch() {
  std::error_code ec;
  std::filesystem::remove_all(made, ec);
}
}  // namespace

const std::filesystem::path& scratch() {
  if (made.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "dtbench-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    made = pattern;
    std::atexit(remove_scratch);
  }
  return made;
}

}  // namespace dtbench::fuzz
