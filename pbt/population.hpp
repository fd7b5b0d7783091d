// The population-based training step (Jaderberg et al. 2017, section 3 and appendix A.1): at each ready point
// every member has been evaluated; exploit by truncation selection (each member of the bottom fraction, and
// every member whose run failed, takes the weights and optimizer state of a member of the top fraction drawn
// uniformly), then explore by perturbation (each hyperparameter of the copy multiplied by one of the perturb
// factors drawn uniformly) or, with the resample probability, by a fresh draw from its prior; a value is
// clamped to its prior's range and rounded for an integer key. Random search is the same population without
// the step, but for its failed members, which are replaced the same way. Every draw comes from an Rng seeded with the spec's seed, the ready point and the member, so a
// campaign continued after an interruption makes the same choices.
#pragma once

#include <cstdint>
#include <vector>

#include "core/json.hpp"
#include "core/rng.hpp"
#include "pbt/spec.hpp"

namespace dtbench::pbt {

// A draw of every hyperparameter from its prior: an object key -> value.
Json sample(const Spec& spec, Rng& rng);

// The explore step applied to `hyperparameters` (a copy of a top member's).
Json explore(const Spec& spec, const Json& hyperparameters, Rng& rng);

// Truncation selection. scores[m]: member m's test accuracy at this ready point, NaN when its run failed,
// -infinity when it diverged (or diverged earlier: a random-search member stays diverged). Returns, for each
// member, the member whose checkpoint it continues from: itself when it is kept, a member of the top
// `spec.cut()` among those with a finite score otherwise. PBT replaces the bottom `spec.cut()` of the members
// with a finite score and, besides them, every failed and every diverged member; random search only the failed
// ones (a diverged member is not trained further). Throws RunFailed when no member has a finite score.
std::vector<int> select(const Spec& spec, const std::vector<double>& scores, Rng& rng);

// The stream of ready point `interval` (0-based) and `member`: Rng(seed, {interval, member}).
Rng stream(const Spec& spec, int64_t interval, int member);

}  // namespace dtbench::pbt
