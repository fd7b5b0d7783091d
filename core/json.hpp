// The one JSON type used everywhere: insertion-ordered so configs and records read in a stable,
// human-friendly order.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dtbench {
using Json = nlohmann::ordered_json;

// Reads and parses a JSON file (configs, sweep specs, records, published tables). BadInput
// "<path>: cannot open <what>", or "<path>:LINE:COLUMN: invalid JSON (byte N)" at the parse error.
Json read_json_file(const std::string& path, const std::string& what);
}  // namespace dtbench
