// Claim c: LARS (You et al. 2017) and LAMB (You et al. 2019) extend the usable batch beyond SGD with linear scaling
// and warmup. Terms: the runs share a fixed budget (epochs); usable(o, B) means the median over repeats of the final
// test accuracy of optimizer o at global batch B reaches `target_accuracy`, with the best of the metaparameter points
// the grid gives o at B (a small learning-rate grid per optimizer: each is tuned alike); B_max(o) is the largest
// usable batch.
// Supported: some optimizer other than `baseline` has a larger B_max than the baseline. Contradicted: none has.
// Inconclusive: runs missing, or the baseline is usable at no batch at all (then the budget or target is wrong).
#include <algorithm>
#include <map>

#include "reproduce/criteria/kinds.hpp"
#include "reproduce/evidence.hpp"

namespace dtbench::reproduce {
namespace usable_batch_criterion {

void check(const Json& c, const std::string& where) {
  check_keys(c, where, {"target_accuracy", "group_key", "baseline"});
  number_in(c, where, "target_accuracy", 0, 1);
  text_in(c, where, "group_key");  // a config key (dot path)
  text_in(c, where, "baseline");   // the baseline group's value as text
}

// The groups it compares exist among the runs (a misspelt value was found only in the report, after the runs).
void check_experiments(const Json& c, const std::vector<Experiment>& experiments, const std::string& where) {
  check_group_values(c, experiments, where, {"baseline"});
}

Finding evaluate(const Claim&, const Json& c, const std::vector<Experiment>& experiments,
                 const std::filesystem::path& out) {
  const double target = c["target_accuracy"].get<double>();
  const std::string key = c["group_key"].get<std::string>();
  const std::string base = key + "=" + c["baseline"].get<std::string>();
  Finding f;
  std::string missing;
  BatchSeries acc;
  for (const auto& camp : load_sweeps(out, experiments, missing)) {
    // Each point's repeats; per group and batch, the point with the best median (the tuned metaparameters).
    for (const auto& p : camp.points) {
      for (auto& [g, by_batch] : batch_series(p, key, [](const RunRecord& r) { return r.final_accuracy(); }, missing))
        for (auto& [b, v] : by_batch)
          if (!acc[g].count(b) || *median(v) > *median(acc[g][b])) acc[g][b] = v;
    }
  }
  f.figure = batch_figure("accuracy_vs_batch", "final test accuracy", acc);
  f.figure["target"] = target;
  std::map<std::string, int64_t> bmax;
  std::vector<std::vector<std::string>> rows;
  for (const auto& [g, by_batch] : acc) {
    for (const auto& [b, v] : by_batch) {
      const double m = *median(v);
      if (at_least(m, target)) bmax[g] = std::max(bmax[g], b);
    }
    rows.push_back({g, bmax.count(g) ? std::to_string(bmax[g]) : "none"});
    for (const auto& [b, v] : by_batch) rows.back().push_back(std::to_string(b) + ": " + fixed(*median(v), 4));
  }
  size_t width = 2;
  for (const auto& r : rows) width = std::max(width, r.size());
  std::vector<std::string> header = {"group", "largest batch reaching " + fixed(target, 3)};
  for (size_t i = 2; i < width; ++i) header.push_back(i == 2 ? "final accuracy (median) by batch" : "");
  for (auto& r : rows) r.resize(width);
  f.numbers = md_table(header, rows);
  if (!missing.empty() || !acc.count(base)) {
    f.verdict = Verdict::inconclusive;
    f.reason = missing.empty() ? "no finished run of the baseline " + base : "runs missing: " + missing;
    return f;
  }
  if (!bmax.count(base)) {
    f.verdict = Verdict::inconclusive;
    f.reason = "the baseline " + base + " reaches the target at no batch: the budget or the target does not fit";
    return f;
  }
  std::string better, all;
  for (const auto& [g, b] : bmax) {
    if (g == base) continue;
    all += (all.empty() ? "" : ", ") + g + ": " + std::to_string(b);
    if (b > bmax[base]) better += (better.empty() ? "" : ", ") + g;
  }
  f.verdict = better.empty() ? Verdict::contradicted : Verdict::supported;
  f.reason = "largest batch reaching " + fixed(target, 3) + ": " + base + ": " + std::to_string(bmax[base]) +
             (all.empty() ? "" : ", " + all) +
             (better.empty() ? "; no optimizer extends the baseline's." : "; extended by " + better + ".");
  return f;
}

}  // namespace usable_batch_criterion

const CriterionKind kUsableBatch = {"usable_batch", usable_batch_criterion::check, usable_batch_criterion::evaluate,
                                    usable_batch_criterion::check_experiments};

}  // namespace dtbench::reproduce
