// The schema node builders. The nodes themselves live with their modules (optim/, reducers/) and the
// root is assembled in config/run_schema.cpp.
#include "core/config_spec.hpp"

namespace dtbench::config {

using Kind = Node::Kind;

Node::Node() = default;

Node number(double def, double lo, double hi, bool lo_open, bool hi_open, std::string doc) {
  Node n;
  n.kind = Kind::number;
  n.def = def;
  n.lo = lo, n.hi = hi, n.lo_open = lo_open, n.hi_open = hi_open;
  n.doc = std::move(doc);
  return n;
}
Node positive(double def, std::string doc) { return number(def, 0, inf, true, false, std::move(doc)); }
Node nonneg(double def, std::string doc) { return number(def, 0, inf, false, false, std::move(doc)); }
Node unit_open(double def, std::string doc) { return number(def, 0, 1, false, true, std::move(doc)); }
Node single(Node n) {
  n.single = true;
  return n;
}
Node all_single(Node n) {
  if (n.kind == Node::Kind::number) n.single = true;
  for (auto& [key, f] : n.fields) f = all_single(std::move(f));
  for (auto& [name, fields] : n.variants)
    for (auto& [key, f] : fields) f = all_single(std::move(f));
  return n;
}
Node integer(long def, double lo, double hi, std::string doc) {
  Node n;
  n.kind = Kind::integer;
  n.def = def;
  n.lo = lo, n.hi = hi;
  n.doc = std::move(doc);
  return n;
}
Node boolean(bool def, std::string doc) {
  Node n;
  n.kind = Kind::boolean;
  n.def = def;
  n.doc = std::move(doc);
  return n;
}
Node text(std::string def, std::initializer_list<std::string> choices, std::string doc) {
  Node n;
  n.kind = Kind::string;
  n.def = std::move(def);
  n.choices = choices;  // an initializer_list: {"a", "b"} must never become vector(first, last)
  n.doc = std::move(doc);
  return n;
}
Node integers(std::vector<long> def, std::string doc) {
  Node n;
  n.kind = Kind::integer_list;
  n.def = def;
  n.lo = 0;
  n.doc = std::move(doc);
  return n;
}
Node object(Fields fields, std::string doc) {
  Node n;
  n.kind = Kind::object;
  n.fields = std::move(fields);
  n.doc = std::move(doc);
  return n;
}
Node variant(std::string selector, std::string def, Fields common, Variants variants, std::string doc) {
  Node n;
  n.kind = Kind::variant;
  n.selector = selector;
  n.def = def;
  n.fields = std::move(common);
  n.variants = std::move(variants);
  n.doc = std::move(doc);
  return n;
}

std::vector<std::string> variant_names(const Node& node) {
  std::vector<std::string> names;
  for (const auto& [name, fields] : node.variants) names.push_back(name);
  return names;
}

const Fields* variant_fields(const Node& node, const std::string& value, Fields& storage) {
  for (const auto& [name, extra] : node.variants) {
    if (name != value) continue;
    storage = node.fields;
    for (const auto& [key, field] : extra) {
      bool replaced = false;
      for (auto& [k, f] : storage) {
        if (k == key) {
          f = field;
          replaced = true;
        }
      }
      if (!replaced) storage.emplace_back(key, field);
    }
    return &storage;
  }
  return nullptr;
}

}  // namespace dtbench::config
