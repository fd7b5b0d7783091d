// Claim a: data-parallel synchronous SGD on K ranks with per-rank batch b gives the same weights as one rank with
// batch K*b (and K ranks x m micro-batches as K*m ranks). Each sweep experiment's FIRST point is the reference
// (1 rank, say); every other point's run is compared with the reference run of the same seed. The difference is
// the largest absolute parameter difference over the largest reference parameter magnitude,
//     d = max_i |w_i - r_i| / max_i |r_i|,
// which is scale-free and does not blow up at parameters near zero (an element-wise ratio would). The runs differ
// only in summation order (fp32 additions of K partial sums instead of one sum), so d is small but not zero; the
// tolerance in the claim's criterion bounds it.
#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/campaign_data.hpp"
#include "reproduce/criteria/kinds.hpp"
#include "reproduce/evidence.hpp"

namespace dtbench::reproduce {
namespace {

void check(const Json& c, const std::string& where) {
  check_keys(c, where, {"tolerance"});
  number_in(c, where, "tolerance", 0, 1);
}

std::string point_label(const analysis::RunData& r) {
  const Json micro = analysis::key_value(r, "batch.micro_batches");
  int64_t m = micro.is_number_integer() ? micro.get<int64_t>() : 1;
  std::string s = "K=" + std::to_string(r.ranks);
  if (m > 1) s += " x m=" + std::to_string(m);
  if (r.record) s += " x b=" + std::to_string(r.record->per_rank_batch / m);
  return s;
}

Finding evaluate(const Claim&, const Json& c, const std::vector<Experiment>& experiments,
                 const std::filesystem::path& out) {
  const double tol = c["tolerance"].get<double>();
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> problems;
  int over = 0;
  double worst = 0;
  std::string missing;
  std::map<std::string, std::pair<std::vector<float>, std::string>> references;  // record -> weights, problem
  for (const auto& camp : load_sweeps(out, experiments, missing)) {
    if (camp.points.empty()) continue;
    const auto& ref_point = camp.points.front();
    for (size_t p = 1; p < camp.points.size(); ++p)
      for (const auto& run : camp.points[p].runs) {
        if (run.state != "done") continue;
        const analysis::RunData* ref = nullptr;
        for (const auto& r : ref_point.runs)
          if (r.state == "done" && analysis::key_value(r, "seed") == analysis::key_value(run, "seed")) ref = &r;
        if (!ref) {
          problems.push_back(camp.name + ": no finished reference run for " + run.name);
          continue;
        }
        auto [it, fresh] = references.try_emplace(ref->record_path.string());  // each reference's weights read once
        if (fresh) it->second.first = saved_parameters(*ref, it->second.second);
        const std::vector<float>& b = it->second.first;
        std::string problem = it->second.second;
        auto a = problem.empty() ? saved_parameters(run, problem) : std::vector<float>{};
        if (!problem.empty() || a.size() != b.size()) {
          problems.push_back(problem.empty() ? run.name + ": parameter count differs from " + ref->name : problem);
          continue;
        }
        double num = 0, den = 0;
        for (size_t i = 0; i < a.size(); ++i) {
          num = std::max(num, std::fabs(double(a[i]) - double(b[i])));
          den = std::max(den, std::fabs(double(b[i])));
        }
        double d = den > 0 ? num / den : num;
        if (!std::isfinite(d)) d = INFINITY;
        worst = std::max(worst, d);
        over += d > tol;
        rows.push_back({camp.name, point_label(*ref), point_label(run), value_text(analysis::key_value(run, "seed")),
                        std::to_string(run.record->steps), sci(d, 3), d <= tol ? "yes" : "**no**"});
      }
  }
  Finding f;
  f.numbers = md_table({"experiment", "reference", "compared", "seed", "steps", "max rel. weight difference",
                        "within " + sci(tol, 1)},
                       rows);
  if (!problems.empty()) missing += (missing.empty() ? "" : "; ") + join(problems, "; ");
  if (over > 0) {
    f.verdict = Verdict::contradicted;
    f.reason = std::to_string(over) + " of " + std::to_string(rows.size()) +
               " comparisons exceed the tolerance (largest difference " + sci(worst, 3) + ")" +
               (missing.empty() ? "." : "; also missing: " + missing + ".");
  } else if (!missing.empty() || rows.empty()) {
    f.verdict = Verdict::inconclusive;
    f.reason = "runs missing or without saved weights: " + (missing.empty() ? std::string("no comparisons") : missing);
  } else {
    f.verdict = Verdict::supported;
    f.reason = "all " + std::to_string(rows.size()) + " comparisons are within " + sci(tol, 1) +
               " (largest difference " + sci(worst, 3) + ").";
  }
  return f;
}

}  // namespace

const CriterionKind kEquivalence = {"equivalence", check, evaluate};

}  // namespace dtbench::reproduce
