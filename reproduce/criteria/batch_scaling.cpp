// Claim b: the linear scaling rule with gradual warmup (Goyal et al. 2017, sections 2.1-2.2) keeps the small-batch
// accuracy up to some global batch and loses it beyond. Terms:
//   acc(g, B)   the median over repeats of the final test accuracy of group g (a value of `group_key`, e.g.
//               the warmup length) at global batch B, all runs with the same epoch budget;
//   kept(g, B)  acc(g, B) >= acc(g, reference_batch) - max_drop;
//   B*(g)       the largest batch of the grid such that every batch up to it is kept.
// Supported: in the group `with_warmup`, B* lies above the reference batch and below the largest batch of the grid
// (accuracy is kept for a while and then lost). Contradicted: B* is the reference batch itself, or the whole grid is
// kept. The other groups (no warmup) are reported beside it: Goyal et al. expect warmup's B* to be at least theirs.
#include <algorithm>
#include <map>

#include "reproduce/criteria/kinds.hpp"
#include "reproduce/evidence.hpp"

namespace dtbench::reproduce {
namespace batch_scaling_criterion {

void check(const Json& c, const std::string& where) {
  check_keys(c, where, {"reference_batch", "max_drop", "group_key", "with_warmup"});
  integer_in(c, where, "reference_batch", 1, int64_t{1} << 30);
  number_in(c, where, "max_drop", 0, 1);
  text_in(c, where, "group_key");    // a config key (dot path)
  text_in(c, where, "with_warmup");  // the group's value as text
}

// The groups it compares exist among the runs (a misspelt value was found only in the report, after the runs).
void check_experiments(const Json& c, const std::vector<Experiment>& experiments, const std::string& where) {
  check_group_values(c, experiments, where, {"with_warmup"});
}

Finding evaluate(const Claim&, const Json& c, const std::vector<Experiment>& experiments,
                 const std::filesystem::path& out) {
  const auto ref_batch = c["reference_batch"].get<int64_t>();
  const double drop = c["max_drop"].get<double>();
  const std::string key = c["group_key"].get<std::string>();
  const std::string warm = key + "=" + c["with_warmup"].get<std::string>();
  Finding f;
  std::string missing;
  const BatchSeries acc =
      batch_series(load_sweeps(out, experiments, missing), key, [](const RunRecord& r) { return r.final_accuracy(); }, missing);
  f.figure = batch_figure("accuracy_vs_batch", "final test accuracy", acc);
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, int64_t> best;
  std::map<std::string, int64_t> largest;
  for (const auto& [g, by_batch] : acc) {
    auto ref = by_batch.find(ref_batch);
    if (ref == by_batch.end()) continue;
    const double ref_acc = *median(ref->second);
    bool kept_so_far = true;
    for (const auto& [b, v] : by_batch) {
      const double m = *median(v);
      const bool kept = at_least(m, ref_acc - drop);
      if (b >= ref_batch && kept_so_far && kept) best[g] = b;
      if (b > ref_batch && !kept) kept_so_far = false;
      largest[g] = b;
      rows.push_back({g, std::to_string(b), std::to_string(v.size()), fixed(m, 4), fixed(m - ref_acc, 4),
                      kept ? "yes" : "no"});
    }
  }
  f.numbers = md_table({"group", "global batch", "runs", "final accuracy (median)", "vs batch " +
                        std::to_string(ref_batch), "kept (drop <= " + fixed(drop, 3) + ")"}, rows);
  for (const auto& [g, b] : best) f.numbers += "\nLargest batch keeping accuracy, " + g + ": " + std::to_string(b);
  if (!f.numbers.empty()) f.numbers += "\n";
  if (!missing.empty() || !best.count(warm)) {
    f.verdict = Verdict::inconclusive;
    f.reason = missing.empty() ? "no finished run of " + warm + " at the reference batch " + std::to_string(ref_batch)
                               : "runs missing: " + missing;
    return f;
  }
  const int64_t b_warm = best[warm];
  std::string others;
  for (const auto& [g, b] : best)
    if (g != warm) others += (others.empty() ? "; other settings: " : ", ") + g + ": " + std::to_string(b);
  if (b_warm > ref_batch && b_warm < largest[warm]) {
    f.verdict = Verdict::supported;
    f.reason = "with warmup, accuracy is kept up to global batch " + std::to_string(b_warm) + " and lost beyond it" +
               others + ".";
  } else {
    f.verdict = Verdict::contradicted;
    f.reason = b_warm == ref_batch ? "with warmup, accuracy is already lost at the first batch above " +
                                         std::to_string(ref_batch) + others + "."
                                   : "with warmup, accuracy is kept over the whole grid (up to " +
                                         std::to_string(b_warm) + "): no batch where it is lost" + others + ".";
  }
  return f;
}

}  // namespace batch_scaling_criterion

const CriterionKind kBatchScaling = {"batch_scaling", batch_scaling_criterion::check,
                                     batch_scaling_criterion::evaluate,
                                     batch_scaling_criterion::check_experiments};

}  // namespace dtbench::reproduce
