// The config schema as data: every key, its type, range, choices and default. Each module builds its
// own section with the builders below (optim/ the optimizer and schedule, reducers/ the reducer);
// config/run_schema.cpp assembles the root; config.cpp walks a schema to validate and resolve.
#pragma once

#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/json.hpp"

namespace dtbench::config {

struct Node;
using Fields = std::vector<std::pair<std::string, Node>>;
using Variants = std::vector<std::pair<std::string, Fields>>;  // per selector value: extra or redefaulted fields

struct Node {
  // Defined out of line: clang 14 with libstdc++ 12 cannot otherwise decide whether Node is default-constructible
  // while std::pair<std::string, Node> (Fields) is being instantiated.
  Node();
  enum class Kind { number, integer, boolean, string, object, integer_list, variant };
  Kind kind = Kind::object;
  Json def;                                    // default value of a leaf
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false, hi_open = false;       // (lo, ...) rather than [lo, ...
  bool single = false;                         // a number the code reads as float32 (single() below)
  std::vector<std::string> choices;            // allowed strings; empty = any string
  Fields fields;                               // object fields; for a variant, the fields every variant has
  std::string selector;                        // variant: the key whose value picks the variant ("name")
  Variants variants;                           // variant: extra fields (or new defaults) per name
  std::string doc;                             // one line for `dtbench config --explain`
};

constexpr double inf = std::numeric_limits<double>::infinity();

// Leaves: a number in [lo, hi] (or open ends), > 0, >= 0, in [0, 1); an integer; a boolean; a string
// (one of `choices` unless empty); a list of integers >= 0.
Node number(double def, double lo, double hi, bool lo_open = false, bool hi_open = false, std::string doc = {});
Node positive(double def, std::string doc = {});
Node nonneg(double def, std::string doc = {});
Node unit_open(double def, std::string doc = {});
// `n` read as float32 by the code that uses it (the model's dropout and label smoothing): the value must then be
// inside the range in float32 too, and 0 or a normal float32 (train flushes denormals to zero).
Node single(Node n);
// single() on every number of `n` and of its fields and variants, at any depth (a section the code reads as float32).
Node all_single(Node n);
Node integer(long def, double lo, double hi = inf, std::string doc = {});
Node boolean(bool def, std::string doc = {});
Node text(std::string def, std::initializer_list<std::string> choices = {}, std::string doc = {});
Node integers(std::vector<long> def, std::string doc = {});
// An object of fixed fields; a variant: `common` fields plus those of the variant that `selector`
// (default `def`) names.
Node object(Fields fields, std::string doc = {});
Node variant(std::string selector, std::string def, Fields common, Variants variants, std::string doc = {});

// The selector values of a variant node, in order.
std::vector<std::string> variant_names(const Node& node);

// Fields of a variant node for one selector value (common fields, then the variant's own, a
// variant's field replacing a common one of the same name). Returns nullptr for an unknown value.
const Fields* variant_fields(const Node& node, const std::string& value, Fields& storage);

}  // namespace dtbench::config
