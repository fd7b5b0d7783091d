// Run configs: one JSON document describes a run. Its schema is assembled here from the modules'
// sections (optim/ the optimizer and schedule, reducers/ the reducer; the rest is the run's own);
// resolve() merges a user config and --set overrides onto the defaults, validates strictly and checks
// the cross-field rules (config/rules.hpp), so a record always holds the fully resolved config.
//
// Errors name the key as a JSON pointer, e.g.
//   /optimizer/momentum: expected a number in [0, 1), got "high"
// and are thrown as BadInput (exit code 2).
#pragma once

#include <string>
#include <vector>

#include "core/config_spec.hpp"
#include "core/json.hpp"

namespace dtbench::config {

// The largest /seed, 2^53 - 1 (a JSON number holds every integer up to it exactly): sweeps' repeats and population
// members count seeds up from a base seed, and their last one must be a seed too.
constexpr int64_t kMaxSeed = 9007199254740991;

// The root of the run-config schema (an object node).
const Node& run_schema();

// The complete default config (what `dtbench config` prints with no input).
Json defaults();

// Validates `user` (unknown keys, types, ranges, choices), fills in every default and checks the
// cross-field rules. `ranks` is the number of data-parallel ranks the run will use (rules such as a
// global batch divisible by the rank count depend on it); pass 0 to skip the rules that need it. The
// rules about the machine are left to the trainer (check_rules with on_this_machine).
Json resolve(const Json& user, int ranks);

// Reads a config file (strict JSON; errors give the file, line and column) and applies overrides,
// then resolves. An empty path means "defaults only".
Json load(const std::string& path, const std::vector<std::string>& overrides, int ranks);

// `message` (an error about a config read from `path` with `overrides`) prefixed with where the offending value
// came from: the last --set whose key is the message's JSON pointer, lies below it or above it ("--set
// batch.global=0: /batch: ..."), else the file (unless the message names it already).
std::string attributed(const std::string& message, const std::string& path, const std::vector<std::string>& overrides);

// Data-parallel replicas of a resolved config on `ranks` ranks: ranks / /parallel/model_parallel (the ranks
// themselves without model parallelism).
int replicas(const Json& resolved, int ranks);
// Per-rank batch of a resolved config on `ranks` ranks: per replica, which every rank of a model-parallel group
// sees whole.
long per_rank_batch(const Json& resolved, int ranks);
// Global batch of a resolved config on `ranks` ranks (replicas x per-rank batch).
long global_batch(const Json& resolved, int ranks);

}  // namespace dtbench::config
