// The generic machinery of strict JSON configs: resolving a user document against a schema
// (config_spec.hpp), --set overrides, and the errors every reader shares. The run config itself (its
// root schema, cross-field rules, resolve and load) is config/run_config.hpp.
//
// Errors name the key as a JSON pointer, e.g.
//   /optimizer/momentum: expected a number in [0, 1), got "high"
// and are thrown as BadInput (exit code 2).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config_spec.hpp"
#include "core/json.hpp"

namespace dtbench::config {

// Validates `user` (unknown keys, types, ranges, choices) against `schema` and fills in every default;
// errors name the key as `pointer` + its path. A null `user` gives the schema's defaults.
Json resolve_node(const Node& schema, const Json* user, const std::string& pointer);

// Applies one `key.path=value` override to a (user, unresolved) config. The value is parsed as JSON
// when it parses (numbers, true/false, null, arrays, quoted strings) and taken as a string otherwise.
void apply_override(Json& user, std::string_view assignment);

// Reads a config file (strict JSON; errors give the file, line and column) and applies the overrides,
// without resolving: the user's config as written. An empty path means an empty object.
Json read_user(const std::string& path, const std::vector<std::string>& overrides);
// read_user's second half: `doc` (parsed from the file `where`) must be an object; the overrides are applied.
Json user_config(Json doc, const std::string& where, const std::vector<std::string>& overrides);

// Shared by every strict JSON reader (run configs, sweep specs): the error naming a key,
// "<pointer>: <message>" thrown as BadInput ("/" for the root); a value as messages show it (its JSON
// text, cut at 60 characters); a JSON pointer token ('~' and '/' escaped, RFC 6901), and the "unknown key" error with a did-you-mean suggestion and the valid keys.
[[noreturn]] void fail(const std::string& pointer, const std::string& message);
std::string shown(const Json& v);
std::string fmt_number(double v);  // integers without a point, "inf"
std::string pointer_token(const std::string& key);
// The JSON pointer of a dotted key path as --set, sweep axes and pbt priors write it: "optimizer.lr" ->
// "/optimizer/lr", each key escaped as pointer_token does.
std::string dotted_pointer(std::string_view dotted);
// The valid name closest to a misspelt one (edit distance at most 2), or "".
std::string closest_name(const std::string& key, const std::vector<std::string>& valid);
[[noreturn]] void throw_unknown_key(const std::string& pointer, const std::string& key,
                                    const std::vector<std::string>& valid);

// The kind of the leaf at `pointer` (a path of plain keys, "/optimizer/momentum") in a config that `schema`
// resolved to `resolved`: a variant's fields are those its selector holds there. The schema, not the JSON, says
// whether a key is an integer (a number key written as 0 is still a number). nullopt for no such leaf.
std::optional<Node::Kind> leaf_kind(const Node& schema, const Json& resolved, const std::string& pointer);

}  // namespace dtbench::config
