// The one JSON type used everywhere: insertion-ordered so configs and records read in a stable,
// human-friendly order.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dtbench {
using Json = nlohmann::ordered_json;

// Reads and parses a JSON file (configs, sweep specs, records, published tables). BadInput
// "<path>: cannot open <what>", or "<path>:LINE:COLUMN: invalid JSON (byte N)" at the parse error.
// Strict JSON: BadInput "where:line:col: ..." for invalid JSON, a NUL byte, a number beyond a double's range
// (1e999), nesting deeper than dtbench's documents, or a key given twice in one object (named by its JSON
// pointer).
Json parse_json(const std::string& text, const std::string& where);
// The offset of the first byte that is not part of well-formed UTF-8, or npos.
size_t first_invalid_utf8(const std::string& text);
// parse_json of a regular file of bounded size (core/regular_file.hpp).
Json read_json_file(const std::string& path, const std::string& what);
// The first JSON pointer at which two documents differ ("" if equal), for "a different config / spec" errors.
std::string first_difference(const Json& a, const Json& b);
}  // namespace dtbench
