#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/json.hpp"

namespace dtbench {

Json read_json_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw BadInput(path + ": cannot open " + what);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
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
