// The one JSON type used everywhere: insertion-ordered so configs and records read in a stable,
// human-friendly order.
#pragma once

#include <nlohmann/json.hpp>

namespace dtbench {
using Json = nlohmann::ordered_json;
}  // namespace dtbench
