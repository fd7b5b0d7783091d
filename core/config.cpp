#include "core/config.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/config_spec.hpp"
#include "core/error.hpp"

namespace dtbench::config {
namespace {

using Kind = Node::Kind;

// Integers beyond 2^53 are not exact as JSON numbers (doubles), and beyond 2^63 not an int64_t at all: an
// integer setting is refused there whatever its schema range, before any conversion.
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

bool exact_integer(double v) { return std::floor(v) == v && std::fabs(v) <= kMaxExactInteger; }

std::string range_text(const Node& n) {
  bool has_lo = !std::isinf(n.lo), has_hi = !std::isinf(n.hi);
  if (has_lo && has_hi)
    return std::string(" in ") + (n.lo_open ? "(" : "[") + fmt_number(n.lo) + ", " + fmt_number(n.hi) +
           (n.hi_open ? ")" : "]");
  if (has_lo) return std::string(n.lo_open ? " > " : " >= ") + fmt_number(n.lo);
  if (has_hi) return std::string(n.hi_open ? " < " : " <= ") + fmt_number(n.hi);
  return "";
}

std::string expectation(const Node& n) {
  switch (n.kind) {
    case Kind::number: return "a number" + range_text(n);
    case Kind::integer: return "an integer" + range_text(n) + (n.hi > kMaxExactInteger ? " and <= 2^53" : "");
    case Kind::boolean: return "true or false";
    case Kind::integer_list: return "a list of integers >= 0";
    case Kind::object:
    case Kind::variant: return "an object";
    case Kind::string:
      if (n.choices.empty()) return "a string";
      {
        std::string s = "one of ";
        for (size_t i = 0; i < n.choices.size(); ++i) s += (i ? ", \"" : "\"") + n.choices[i] + "\"";
        return s;
      }
  }
  return "a value";
}

[[noreturn]] void wrong(const std::string& pointer, const Node& n, const Json& got) {
  fail(pointer, "expected " + expectation(n) + ", got " + shown(got));
}

bool in_range(const Node& n, double v) {
  if (std::isnan(v)) return false;
  if (n.lo_open ? !(v > n.lo) : !(v >= n.lo)) return false;
  if (n.hi_open ? !(v < n.hi) : !(v <= n.hi)) return false;
  return true;
}

// A setting the code reads as float32 (Node::single: the model's dropout and label smoothing, every optimizer
// setting, which the kernels cast to float) with denormals flushed to zero (`train` sets FTZ and DAZ) means what it
// says only if float32 holds it as a normal, finite number on the same side of its bounds (found by a hunt: a
// dropout of 0.99999999 passed the config's [0, 1) and was 1.0 to the model, which then refused it without naming
// the key; a learning rate of 1e-39 acted as 0, one of 1e39 as infinity).
void check_single_precision(const std::string& pointer, const Node& n, const Json& v) {
  if (!n.single) return;
  const double d = v.get<double>();
  const auto f = static_cast<double>(static_cast<float>(d));
  const char* why = nullptr;
  if (!std::isfinite(f))
    why = "is beyond the range of float32 (3.4e38)";
  else if (d != 0 && std::fabs(d) < FLT_MIN)
    why = "is nearer 0 than the smallest normal float32 (1.2e-38), so it acts as 0";
  else if (!in_range(n, f))
    why = "rounds to a float32 outside that range";
  if (why == nullptr) return;
  fail(pointer, "expected " + expectation(n) + ", got " + shown(v) + ", which " + why +
                    " (it is read as float32, denormals flushed to zero)");
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

[[noreturn]] void unknown_key(const std::string& pointer, const std::string& key, const Fields& fields) {
  std::vector<std::string> valid;
  for (const auto& [k, f] : fields) valid.push_back(k);
  throw_unknown_key(pointer, key, valid);
}

}  // namespace

std::string fmt_number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::floor(v) == v && std::fabs(v) < 1e16) return std::to_string(static_cast<int64_t>(v));
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string shown(const Json& v) {
  // Replace, not throw: a message about bad input must not fail on the bad input it shows.
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

void fail(const std::string& pointer, const std::string& message) {
  throw BadInput((pointer.empty() ? std::string("/") : pointer) + ": " + message);
}

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string dotted_pointer(std::string_view dotted) {
  std::string out;
  size_t start = 0;
  for (;;) {
    const size_t dot = dotted.find('.', start);
    out += '/';
    out += pointer_token(std::string(dotted.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start)));
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
}

std::string closest_name(const std::string& key, const std::vector<std::string>& valid) {
  std::string best;
  size_t best_d = 3;  // suggest only close misspellings
  for (const auto& k : valid) {
    size_t d = edit_distance(key, k);
    if (d < best_d) best_d = d, best = k;
  }
  return best;
}

void throw_unknown_key(const std::string& pointer, const std::string& key, const std::vector<std::string>& valid) {
  std::string keys;
  for (const auto& k : valid) keys += (keys.empty() ? "" : ", ") + k;
  std::string best = closest_name(key, valid);
  std::string msg = "unknown key";
  if (!best.empty()) msg += " (did you mean \"" + best + "\"?)";
  fail(pointer + "/" + key, msg + "; valid keys here: " + keys);
}

namespace {

Json resolve_fields(const Fields& fields, const Json* user, const std::string& pointer) {
  if (user && !user->is_object()) fail(pointer, "expected an object, got " + shown(*user));
  if (user) {
    for (auto it = user->begin(); it != user->end(); ++it) {
      bool known = std::any_of(fields.begin(), fields.end(), [&](const auto& f) { return f.first == it.key(); });
      if (!known) unknown_key(pointer, pointer_token(it.key()), fields);
    }
  }
  Json out = Json::object();
  for (const auto& [key, field] : fields) {
    const Json* sub = nullptr;
    if (user && user->contains(key)) sub = &(*user)[key];
    out[key] = resolve_node(field, sub, pointer + "/" + key);
  }
  return out;
}

}  // namespace

std::optional<Node::Kind> leaf_kind(const Node& schema, const Json& resolved, const std::string& pointer) {
  Node node = schema;
  const Json* at = &resolved;
  size_t from = 1;
  while (from <= pointer.size()) {
    const size_t slash = std::min(pointer.find('/', from), pointer.size());
    const std::string key = pointer.substr(from, slash - from);
    from = slash + 1;
    Fields storage;
    const Fields* fields = &node.fields;
    if (node.kind == Kind::variant) {
      if (!at->is_object() || !at->contains(node.selector) || !(*at)[node.selector].is_string()) return std::nullopt;
      fields = variant_fields(node, (*at)[node.selector].get<std::string>(), storage);
      if (!fields) return std::nullopt;
    } else if (node.kind != Kind::object) {
      return std::nullopt;  // a path below a leaf
    }
    const auto f = std::find_if(fields->begin(), fields->end(), [&](const auto& field) { return field.first == key; });
    if (f == fields->end() || !at->is_object() || !at->contains(key)) return std::nullopt;
    Node next = f->second;  // f points into node: copied out before node is replaced
    node = std::move(next);
    at = &(*at)[key];
  }
  if (node.kind == Kind::object || node.kind == Kind::variant) return std::nullopt;
  return node.kind;
}

Json resolve_node(const Node& n, const Json* user, const std::string& pointer) {
  switch (n.kind) {
    case Kind::object: return resolve_fields(n.fields, user, pointer);
    case Kind::variant: {
      if (user && !user->is_object()) fail(pointer, "expected an object, got " + shown(*user));
      std::string name = n.def.get<std::string>();
      if (user && user->contains(n.selector)) {
        const Json& sel = (*user)[n.selector];
        if (!sel.is_string()) fail(pointer + "/" + n.selector, "expected a string, got " + shown(sel));
        name = sel.get<std::string>();
      }
      Fields storage;
      const Fields* fields = variant_fields(n, name, storage);
      if (!fields) {
        std::string names;
        for (const auto& [v, f] : n.variants) names += (names.empty() ? "\"" : ", \"") + v + "\"";
        fail(pointer + "/" + n.selector, "expected one of " + names + ", got \"" + name + "\"");
      }
      Json rest = user ? *user : Json::object();
      rest.erase(n.selector);
      Json out = Json::object();
      out[n.selector] = name;
      Json resolved = resolve_fields(*fields, &rest, pointer);
      for (auto it = resolved.begin(); it != resolved.end(); ++it) out[it.key()] = it.value();
      return out;
    }
    default: break;
  }
  if (!user) return n.def;
  const Json& v = *user;
  switch (n.kind) {
    case Kind::number:
      if (!v.is_number() || !in_range(n, v.get<double>())) wrong(pointer, n, v);
      check_single_precision(pointer, n, v);
      return v;
    case Kind::integer: {
      if (!v.is_number()) wrong(pointer, n, v);
      const double d = v.get<double>();
      if (!exact_integer(d) || !in_range(n, d)) wrong(pointer, n, v);
      return Json(static_cast<int64_t>(d));
    }
    case Kind::boolean:
      if (!v.is_boolean()) wrong(pointer, n, v);
      return v;
    case Kind::string:
      if (!v.is_string()) wrong(pointer, n, v);
      if (!n.choices.empty() &&
          std::find(n.choices.begin(), n.choices.end(), v.get<std::string>()) == n.choices.end())
        wrong(pointer, n, v);
      return v;
    case Kind::integer_list: {
      if (!v.is_array()) wrong(pointer, n, v);
      Json out = Json::array();
      for (size_t i = 0; i < v.size(); ++i) {
        const Json& e = v[i];
        if (!e.is_number() || !exact_integer(e.get<double>()) || e.get<double>() < 0)
          fail(pointer + "/" + std::to_string(i), "expected an integer >= 0 and <= 2^53, got " + shown(e));
        out.push_back(static_cast<int64_t>(e.get<double>()));
      }
      return out;
    }
    default: break;
  }
  return v;
}

namespace {
// Whether `t` is a number in JSON's grammar, -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, read in one pass (a
// std::regex recursed once a character and overflowed the stack on a --set value of 30,000 digits; a review).
bool json_number_syntax(std::string_view t) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i > from;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0') ++i;
  else if (!(i < t.size() && t[i] >= '1' && t[i] <= '9') || !digits()) return false;
  if (i < t.size() && t[i] == '.' && (++i, !digits())) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}
}  // namespace

void apply_override(Json& user, std::string_view assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw BadInput("--set " + std::string(assignment) + ": expected key.path=value");
  std::string path(assignment.substr(0, eq));
  std::string text(assignment.substr(eq + 1));
  // Keys become JSON object keys, which are UTF-8 like every string of a config (the message does not echo them).
  if (size_t bad = first_invalid_utf8(path); bad != std::string::npos)
    throw BadInput("--set: the key path is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  Json value;
  // A value in JSON's number grammar is a number whatever its size (nlohmann refuses 1e999, which then became the
  // string "1e999" and a type error without the line and column parse_json gives every other JSON input; a hunt).
  if (Json::accept(text) || json_number_syntax(text)) {
    // Strict: no duplicate keys, bounded nesting. Pointers in its messages are within the value: say where it goes.
    value = parse_json(text, "--set " + path + " (the value of " + dotted_pointer(path) + ")");
  } else {
    // A bare word such as adam or results/x: a JSON string, so it must be UTF-8.
    if (size_t bad = first_invalid_utf8(text); bad != std::string::npos)
      throw BadInput("--set " + path + ": the value is not valid UTF-8 (byte " + std::to_string(bad) + ")");
    value = text;
  }
  if (!user.is_object()) user = Json::object();
  Json* node = &user;
  size_t start = 0;
  for (;;) {
    size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) throw BadInput("--set " + std::string(assignment) + ": empty key in \"" + path + "\"");
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return;
    }
    Json& next = (*node)[key];
    // A key that is missing (or null) becomes a section; a value of another kind is not replaced without a word (the
    // file's "optimizer": "adam" vanished under --set optimizer.lr=0.3, which then trained SGD).
    if (next.is_null()) next = Json::object();
    if (!next.is_object())
      throw BadInput("--set " + std::string(assignment) + ": \"" + path.substr(0, dot) + "\" is " + shown(next) +
                     " in the config, not a section whose keys --set can set (set \"" + path.substr(0, dot) +
                     "\" itself, or fix the file)");
    node = &next;
    start = dot + 1;
  }
}

Json user_config(Json doc, const std::string& where, const std::vector<std::string>& overrides) {
  if (!doc.is_object()) throw BadInput(where + ": a config must be a JSON object");
  for (const auto& o : overrides) apply_override(doc, o);
  return doc;
}

Json read_user(const std::string& path, const std::vector<std::string>& overrides) {
  return user_config(path.empty() ? Json::object() : read_json_file(path, "config file"), path, overrides);
}

}  // namespace dtbench::config
