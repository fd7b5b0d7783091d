// The config schema as data: every key, its type, range, choices and default. config_spec.cpp holds
// the one tree of defaults; config.cpp walks it to validate and resolve user configs.
#pragma once

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/json.hpp"

namespace dtbench::config {

struct Node;
using Fields = std::vector<std::pair<std::string, Node>>;

struct Node {
  enum class Kind { number, integer, boolean, string, object, integer_list, variant };
  Kind kind = Kind::object;
  Json def;                                    // default value of a leaf
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false, hi_open = false;       // (lo, ...) rather than [lo, ...
  std::vector<std::string> choices;            // allowed strings; empty = any string
  Fields fields;                               // object fields; for a variant, the fields every variant has
  std::string selector;                        // variant: the key whose value picks the variant ("name")
  std::vector<std::pair<std::string, Fields>> variants;  // variant: extra fields (or new defaults) per name
  std::string doc;                             // one line for `dtbench config --explain`
};

// The root of the schema (an object node).
const Node& schema();

// Fields of a variant node for one selector value (common fields, then the variant's own, a
// variant's field replacing a common one of the same name). Returns nullptr for an unknown value.
const Fields* variant_fields(const Node& node, const std::string& value, Fields& storage);

}  // namespace dtbench::config
