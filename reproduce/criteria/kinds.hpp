// The criterion kinds, one file each (reproduce/criteria/<kind>.cpp); criterion_kind() in criteria.cpp lists them.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "reproduce/finding.hpp"

namespace dtbench::reproduce {

extern const CriterionKind kEquivalence;      // claim a: K ranks x b against 1 rank x K*b, weights compared
extern const CriterionKind kBatchScaling;     // claim b: accuracy kept up to a batch, lost beyond
extern const CriterionKind kUsableBatch;      // claim c: the largest batch reaching a target, per optimizer
extern const CriterionKind kCriticalBatch;    // claim d: steps to target against batch, S(B) fit, regimes
extern const CriterionKind kAsyncCost;        // claim e: async needs more epochs and more tuning than sync
extern const CriterionKind kTraffic;          // claim g: bytes per rank counted against closed forms
extern const CriterionKind kCommHiding;       // claim f: which per-node batch hides the allreduce in backward
extern const CriterionKind kPublishedTable;   // claim h: the seeds' table regenerated, its figures consistent
extern const CriterionKind kTimeToTrain;      // claim i: published times to train predicted within a bound

// Whether accuracy `a` is at least `bound`, an accuracy the criterion computed (a target, a reference less a drop):
// accuracies are fractions k/n of a test set, and `bound` carries the rounding of its own arithmetic (0.5006 - 0.01
// is 0.49060000000000004 in binary), so a tolerance far below one image of any test set (1e-9) keeps an accuracy
// exactly at the bound on the side the criterion's text puts it.
inline bool at_least(double a, double bound) { return a >= bound - 1e-9; }

// Whether a relative error is within `bound` ("within 10%"): one computed from decimal figures carries their binary
// rounding (600 x 0.033 min against 0.3 min is 0.10000000000000009 off), and a row exactly at the bound was judged
// outside it (a hunt). The same 1e-9, far below any published figure's precision.
inline bool within(double rel_error, double bound) { return std::fabs(rel_error) <= bound + 1e-9; }

// The least-squares fit of S(B) = s_min (1 + b_crit / B) on relative error (critical_batch.cpp); false when no
// positive s_min and non-negative b_crit fit.
bool fit_critical_batch(const std::vector<double>& batch, const std::vector<double>& steps, double& s_min,
                        double& b_crit);

// Claim a's bound on one comparison (equivalence.cpp): the tolerance when the sweep has no rounding-only
// control, else max(tolerance, control_factor * d_control); nullopt (not judged) when the sweep has a control but
// this seed's is missing or not finite, or when the bound reaches 1.
std::optional<double> equivalence_bound(double tolerance, double control_factor, bool has_control,
                                        std::optional<double> d_control);

// Parameter checks shared by the kinds: `only` the listed keys (besides "kind" and "text"), and typed reads
// whose errors name `where` + the key's pointer.
void check_keys(const Json& criterion, const std::string& where, std::initializer_list<const char*> keys);
double number_in(const Json& criterion, const std::string& where, const char* key, double lo, double hi);
int64_t integer_in(const Json& criterion, const std::string& where, const char* key, int64_t lo, int64_t hi);
std::string text_in(const Json& criterion, const std::string& where, const char* key);
// A non-empty list of texts.
std::vector<std::string> texts_in(const Json& criterion, const std::string& where, const char* key);
// The experiment the criterion's "inputs" names among a scale's: a "published" one copying each of `files`; BadInput
// naming where + "/inputs" otherwise.
const Experiment& published_inputs(const Json& criterion, const std::vector<Experiment>& experiments,
                                   const std::string& where, std::initializer_list<const char*> files);
// Each of `values` (keys of the criterion holding a group's text) names a group that some run of the scale's sweep
// experiments will be in, by the criterion's "group_key" (group_text of the runs' resolved configs, as the report
// groups the records): a misspelt key or value is refused before any run, naming where + its key.
void check_group_values(const Json& criterion, const std::vector<Experiment>& experiments, const std::string& where,
                        std::initializer_list<const char*> values);
// The experiment the criterion's `key` names among a scale's, of `kind`; BadInput naming where + "/" + key otherwise.
const Experiment& named_experiment(const Json& criterion, const std::vector<Experiment>& experiments,
                                   const std::string& where, const char* key, const std::string& kind);

}  // namespace dtbench::reproduce
