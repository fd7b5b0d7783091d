#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"
#include "core/regular_file.hpp"

namespace dtbench {
namespace {

// A JSON input (config, spec, record, table) larger than this is not one dtbench wrote or needs.
constexpr uint64_t kMaxJsonBytes = uint64_t{256} << 20;
// Deeper nesting than any dtbench document has; parsing (and freeing) a value nests recursively, so a
// document 100,000 arrays deep would overflow the stack.
constexpr int kMaxDepth = 64;

// "where:line:col" of byte `off` in `text`, for editors.
std::string position(const std::string& where, const std::string& text, size_t off) {
  off = std::min(off, text.size());
  size_t line = 1, col = 1;
  for (size_t i = 0; i < off; ++i) {
    if (text[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return where + ":" + std::to_string(line) + ":" + std::to_string(col);
}

// A number whose magnitude no double holds: too large (1e999: the parser would throw a bare "number overflow"), or
// too small for a normal double (1e-400 is read as 0, 1e-320 as a denormal that `train` flushes to 0: found by a
// hunt, a weight decay of 1e-320 was 1e-320 to `config` and `sweep` and 0 to `train`, whose record the sweep then
// refused as made from another config). Zero itself, in any spelling (0, -0.0, 0e5), is a number like any other.
void check_number(const std::string& text, const std::string& where, size_t begin, size_t end) {
  const std::string number = text.substr(begin, end - begin);
  const double v = std::strtod(number.c_str(), nullptr);
  const size_t exponent = number.find_first_of("eE");
  const bool zero_written = number.substr(0, exponent).find_first_of("123456789") == std::string::npos;
  const char* problem = !std::isfinite(v)                                        ? "is beyond the range of a double"
                        : (v == 0 && !zero_written) || (v != 0 && std::fabs(v) < DBL_MIN) ? "is nearer 0 than the smallest normal double (2.2e-308): it would be read as 0 or a denormal"
                                                                                 : nullptr;
  if (problem == nullptr) return;
  const std::string shown = number.size() > 40 ? number.substr(0, 37) + "..." : number;
  throw BadInput(position(where, text, begin) + ": the number " + shown + " " + problem + " (byte " +
                 std::to_string(begin) + ")");
}

// NUL bytes, nesting depth and numbers out of range, checked before the parser sees the text.
void check_bytes_and_depth(const std::string& text, const std::string& where) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\0')
      throw BadInput(position(where, text, i) + ": a NUL byte (byte " + std::to_string(i) + "); JSON text has none");
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '-' || (c >= '0' && c <= '9')) {  // outside strings, only numbers hold these
      size_t end = i;
      while (end < text.size() && text[end] != '\0' && std::strchr("0123456789+-.eE", text[end]) != nullptr) ++end;
      check_number(text, where, i, end);
      i = end - 1;
      continue;
    }
    if (c == '[' || c == '{') {
      if (++depth > kMaxDepth)
        throw BadInput(position(where, text, i) + ": nested deeper than " + std::to_string(kMaxDepth) +
                       " levels (byte " + std::to_string(i) + ")");
    }
    if (c == ']' || c == '}') --depth;
  }
}

std::string token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out.append("~0");
    else if (c == '/') out.append("~1");
    else out.push_back(c);
  }
  return out;
}

// The JSON pointer of the value being parsed, followed through the parser's events, to name a key that
// appears twice in one object (JSON parsers silently keep one of them; a config must not).
class DuplicateKeys {
 public:
  bool event(Json::parse_event_t ev, const Json& parsed) {
    using E = Json::parse_event_t;
    switch (ev) {
      case E::object_start: frames_.push_back({true, {}, {}, 0}); break;
      case E::array_start: frames_.push_back({false, {}, {}, 0}); break;
      case E::key: {
        const std::string k = parsed.get<std::string>();
        if (!frames_.back().keys.insert(k).second) duplicate_ = pointer().append("/").append(token(k));
        frames_.back().key = k;
        break;
      }
      case E::object_end:
      case E::array_end:
        frames_.pop_back();
        next();
        break;
      case E::value: next(); break;
    }
    return true;
  }
  const std::string& duplicate() const { return duplicate_; }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;
    size_t index;
  };
  void next() {
    if (!frames_.empty() && !frames_.back().object) frames_.back().index++;
  }
  std::string pointer() const {
    std::string p;
    // (append, not "/" + ...: GCC 12 warns falsely (-Wrestrict) about the temporary.)
    for (size_t i = 0; i + 1 < frames_.size(); ++i)
      p.append("/").append(frames_[i].object ? token(frames_[i].key) : std::to_string(frames_[i].index));
    return p;
  }
  std::vector<Frame> frames_;
  std::string duplicate_;
};

}  // namespace

size_t first_invalid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size() || (n == 2 && c < 0xc2) || (n == 4 && c > 0xf4)) return i;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return i;
    const auto c1 = static_cast<unsigned char>(s[i + 1 < s.size() ? i + 1 : i]);
    if ((n == 3 && c == 0xe0 && c1 < 0xa0) || (n == 3 && c == 0xed && c1 > 0x9f) || (n == 4 && c == 0xf0 && c1 < 0x90) ||
        (n == 4 && c == 0xf4 && c1 > 0x8f))
      return i;  // overlong forms, UTF-16 surrogates, beyond U+10FFFF
    i += n;
  }
  return std::string::npos;
}

Json parse_json(const std::string& text, const std::string& where) {
  check_bytes_and_depth(text, where);
  DuplicateKeys dup;
  Json value;
  try {
    value = Json::parse(text, [&dup](int, Json::parse_event_t ev, Json& parsed) { return dup.event(ev, parsed); });
  } catch (const Json::parse_error& e) {
    const size_t off = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    // The parser stops inside a string at a byte that is not UTF-8: say so, at that byte.
    if (const size_t bad = first_invalid_utf8(text); bad <= off)
      throw BadInput(position(where, text, bad) + ": not valid UTF-8 (byte " + std::to_string(bad) +
                     "); JSON text is UTF-8");
    throw BadInput(position(where, text, off) + ": invalid JSON (byte " + std::to_string(off) + ")");
  }
  if (!dup.duplicate().empty())
    throw BadInput(where + ": " + dup.duplicate() + ": the key appears twice in one object (which one is meant?)");
  return value;
}

Json read_json_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw BadInput(path + ": cannot open " + what);
  return parse_json(read_regular_file(path, kMaxJsonBytes, what), path);
}

std::string first_difference(const Json& a, const Json& b) {
  const nlohmann::json first = nlohmann::json::parse(a.dump()), second = nlohmann::json::parse(b.dump());
  const nlohmann::json patch = nlohmann::json::diff(first, second);
  if (patch.empty()) return "";
  // Arrays of other lengths are named whole: JSON Patch appends at ".../-", which names no value of either document
  // (a checkpoint's pipeline_cut with one stage less), and removes the last element first ([1, 2, 3] against [1]
  // named /2).
  const nlohmann::json::json_pointer at(patch[0]["path"].get<std::string>());
  if (!at.empty() && !at.parent_pointer().empty()) {  // (the root's pointer is "", read as "no difference")
    const nlohmann::json::json_pointer parent = at.parent_pointer();
    if (first.contains(parent) && second.contains(parent) && first.at(parent).is_array() &&
        second.at(parent).is_array() && first.at(parent).size() != second.at(parent).size())
      return parent.to_string();
  }
  return at.to_string();
}

}  // namespace dtbench
