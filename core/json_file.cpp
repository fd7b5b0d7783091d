#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
#include "core/json.hpp"
#include "core/regular_file.hpp"

namespace dtbench {

// A JSON input (config, spec, record, table) larger than this is not one dtbench wrote or needs.
constexpr uint64_t kMaxJsonBytes = uint64_t{256} << 20;

Json read_json_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw BadInput(path + ": cannot open " + what);
  const std::string text = read_regular_file(path, kMaxJsonBytes, what);
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    // The byte offset of the error as line and column, for editors.
    const size_t off = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    size_t line = 1, col = 1;
    for (size_t i = 0; i < off; ++i) {
      if (text[i] == '\n') ++line, col = 1;
      else ++col;
    }
    throw BadInput(path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": invalid JSON (byte " +
                   std::to_string(off) + ")");
  }
}

}  // namespace dtbench
