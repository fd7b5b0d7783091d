// Run configs: one JSON document describes a run. All defaults live in config_spec.cpp; resolve()
// merges a user config and --set overrides onto them and validates strictly, so a record always holds
// the fully resolved config.
//
// Errors name the key as a JSON pointer, e.g.
//   /optimizer/momentum: expected a number in [0, 1), got "high"
// and are thrown as BadInput (exit code 2).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"

namespace dtbench::config {

// The complete default config (what `dtbench config` prints with no input).
Json defaults();

// Applies one `key.path=value` override to a (user, unresolved) config. The value is parsed as JSON
// when it parses (numbers, true/false, null, arrays, quoted strings) and taken as a string otherwise.
void apply_override(Json& user, std::string_view assignment);

// Validates `user` (unknown keys, types, ranges, choices) and fills in every default. `ranks` is the
// number of data-parallel ranks the run will use (cross-field rules such as a global batch divisible
// by the rank count depend on it); pass 0 to skip the rules that need it.
Json resolve(const Json& user, int ranks);

// Reads a config file (strict JSON; errors give the file, line and column) and applies the overrides,
// without resolving: the user's config as written. An empty path means an empty object.
Json read_user(const std::string& path, const std::vector<std::string>& overrides);

// Reads a config file (strict JSON; errors give the file, line and column) and applies overrides,
// then resolves. An empty path means "defaults only".
Json load(const std::string& path, const std::vector<std::string>& overrides, int ranks);

// Shared by every strict JSON reader (run configs, sweep specs): a JSON pointer token ('~' and '/'
// escaped, RFC 6901), and the "unknown key" error with a did-you-mean suggestion and the valid keys.
std::string pointer_token(const std::string& key);
// The valid name closest to a misspelt one (edit distance at most 2), or "".
std::string closest_name(const std::string& key, const std::vector<std::string>& valid);
[[noreturn]] void throw_unknown_key(const std::string& pointer, const std::string& key,
                                    const std::vector<std::string>& valid);

// Per-rank batch of a resolved config on `ranks` ranks.
long per_rank_batch(const Json& resolved, int ranks);
// Global batch of a resolved config on `ranks` ranks.
long global_batch(const Json& resolved, int ranks);

}  // namespace dtbench::config
