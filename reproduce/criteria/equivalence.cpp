// Claim a: data-parallel synchronous SGD on K ranks with per-rank batch b gives the same weights as one rank with
// batch K*b (and K ranks x m micro-batches as K*m ranks). Each sweep experiment's FIRST point is the reference
// (1 rank, say); every other point's run is compared with the reference run of the same seed. The difference is
// the largest absolute parameter difference over the largest reference parameter magnitude,
//     d = max_i |w_i - r_i| / max_i |r_i|,
// which is scale-free and does not blow up at parameters near zero (an element-wise ratio would). The runs differ
// only in summation order (fp32 additions of K partial sums instead of one sum), so d is small but not zero.
//
// The rounding-only control. Over tens of steps a ReLU network amplifies ANY rounding difference: when a
// pre-activation sits near zero for one sample, a last-bit difference can switch that unit for that sample, which
// changes the step by that sample's whole contribution to the unit's weights (measured on the MLP: at step 35 the
// difference sits in one hidden unit's row, 1000x the median row). A point with the reference's own layout (same
// K, m and b) that differs only in the summation order (another thread count) measures that floor, d_control, for
// the same seed and steps. A point is a control only when its runs' resolved config is the reference's but for
// `threads` (and the run's name and output). A compared run passes when
//     d <= bound = max(tolerance, control_factor * d_control),
// the tolerance alone when the sweep has no control. It cannot be judged (inconclusive, never a pass) when the
// sweep has a control but this seed's is missing, or when the bound reaches 1: a control that drifts as far as
// the weights are large leaves nothing to compare. A real fault (a wrong shard, a missing rank, a wrong average,
// even a learning rate off by 5%) moves the weights by many times the control (measured, 200 MLP steps: the control
// 2.4-3.2e-2, a 5% learning-rate error 0.33-0.59).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "analysis/campaign_data.hpp"
#include "reproduce/criteria/kinds.hpp"
#include "reproduce/evidence.hpp"

namespace dtbench::reproduce {

std::optional<double> equivalence_bound(double tolerance, double control_factor, bool has_control,
                                        std::optional<double> d_control) {
  if (!has_control) return tolerance;
  if (!d_control || !std::isfinite(*d_control)) return std::nullopt;  // the control is missing or diverged
  const double bound = std::max(tolerance, control_factor * *d_control);
  if (bound >= 1) return std::nullopt;
  return bound;
}

namespace equivalence_criterion {

void check(const Json& c, const std::string& where) {
  check_keys(c, where, {"tolerance", "control_factor"});
  number_in(c, where, "tolerance", 0, 1);
  number_in(c, where, "control_factor", 1, 1000);
}

// Whether `run` repeats the reference's run with another thread count and nothing else: the rounding-only
// control. The spec says so, as it defines both runs (the files of a run may be gone: a control whose records and
// config files were deleted was taken for no control, and the sweep judged against the tolerance alone; a hunt).
bool is_control(const SpecRun& run, const SpecRun& ref) {
  if (run.ranks != ref.ranks || !run.config.is_object() || !ref.config.is_object()) return false;
  Json a = run.config, b = ref.config;
  for (const char* key : {"name", "output", "threads"}) {
    a.erase(key);
    b.erase(key);
  }
  return a == b && run.config.value("threads", Json()) != ref.config.value("threads", Json());
}

// The data-parallel layout of a run: ranks, micro-batches, per-micro-batch batch.
std::string layout_label(const analysis::RunData& r) {
  const Json micro = analysis::key_value(r, "batch.micro_batches");
  int64_t m = micro.is_number_integer() ? micro.get<int64_t>() : 1;
  std::string s = "K=" + std::to_string(r.ranks);
  if (m > 1) s += " x m=" + std::to_string(m);
  if (r.record) s += " x b=" + std::to_string(r.record->per_rank_batch / m);
  return s;
}

std::string point_label(const analysis::RunData& r) {
  const Json threads = analysis::key_value(r, "threads");
  std::string s = layout_label(r);
  if (threads.is_number_integer() && threads.get<int64_t>() != 1) s += ", " + value_text(threads) + " threads";
  return s;
}

double weight_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::fabs(double(a[i]) - double(b[i])));
    den = std::max(den, std::fabs(double(b[i])));
  }
  double d = den > 0 ? num / den : num;
  return std::isfinite(d) ? d : INFINITY;
}

struct Comparison {
  std::string experiment, reference, compared, seed;
  int64_t steps = 0;
  double d = 0;
  bool control = false;
};

Finding evaluate(const Claim&, const Json& c, const std::vector<Experiment>& experiments,
                 const std::filesystem::path& out) {
  const double tol = c["tolerance"].get<double>(), factor = c["control_factor"].get<double>();
  std::vector<Comparison> comparisons;
  std::vector<std::string> problems;
  std::string missing;
  std::map<std::string, std::pair<std::vector<float>, std::string>> references;  // record -> weights, problem
  std::set<std::string> with_control;  // experiments whose sweep has a control point
  std::map<std::string, SpecRun> spec_runs;
  const auto spec_run = [&](const analysis::CampaignData& camp, const analysis::PointData& p) -> const SpecRun* {
    if (p.runs.empty()) return nullptr;
    auto it = spec_runs.find(camp.name + "/" + p.runs.front().name);
    return it == spec_runs.end() ? nullptr : &it->second;
  };
  for (const auto& camp : load_sweeps(out, experiments, missing, &spec_runs)) {
    if (camp.points.empty()) continue;
    const auto& ref_point = camp.points.front();
    const SpecRun* ref_spec = spec_run(camp, ref_point);
    for (size_t p = 1; p < camp.points.size(); ++p) {
      const SpecRun* run_spec = spec_run(camp, camp.points[p]);
      const bool control = ref_spec && run_spec && is_control(*run_spec, *ref_spec);
      if (control) with_control.insert(camp.name);
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
        if (fresh) {
          it->second.first = saved_parameters(*ref, it->second.second);
          // The reference is one rank with the whole model: its weights hold every parameter its record counts (a
          // record whose /extra/weights/parameters said 0 compared nothing, d = 0, "supported"; found by a hunt).
          const Json& extra = ref->record->extra;
          if (it->second.second.empty() &&
              (it->second.first.empty() || !extra.contains("parameters") || !extra["parameters"].is_number_unsigned() ||
               extra["parameters"].get<uint64_t>() != it->second.first.size()))
            it->second.second = ref->record_path.string() + ": its weights file holds " +
                                std::to_string(it->second.first.size()) + " parameters to compare, where its record's " +
                                "/extra/parameters counts " + (extra.contains("parameters") ? extra["parameters"].dump() : "none");
        }
        const std::vector<float>& b = it->second.first;
        std::string problem = it->second.second;
        auto a = problem.empty() ? saved_parameters(run, problem) : std::vector<float>{};
        if (!problem.empty() || a.size() != b.size()) {
          problems.push_back(problem.empty() ? run.name + ": parameter count differs from " + ref->name : problem);
          continue;
        }
        comparisons.push_back({camp.name, point_label(*ref), point_label(run),
                               value_text(analysis::key_value(run, "seed")), run.record->steps,
                               weight_difference(a, b), control});
      }
    }
  }
  // The largest control difference per experiment and seed (runs of one seed share the initial weights).
  std::map<std::pair<std::string, std::string>, double> controls;
  for (const auto& x : comparisons)
    if (x.control) {
      auto [it, fresh] = controls.try_emplace({x.experiment, x.seed}, x.d);
      if (!fresh) it->second = std::max(it->second, x.d);
    }
  std::vector<std::vector<std::string>> rows;
  int over = 0, compared = 0;
  double worst = 0;
  std::vector<std::string> unjudged;
  for (const auto& x : comparisons) {
    if (x.control) {
      rows.push_back({x.experiment, x.reference, x.compared, x.seed, std::to_string(x.steps), sci(x.d, 3),
                      "(control)", "", ""});
      continue;
    }
    auto it = controls.find({x.experiment, x.seed});
    std::optional<double> dc;
    if (it != controls.end()) dc = it->second;
    const std::optional<double> bound = equivalence_bound(tol, factor, with_control.count(x.experiment) > 0, dc);
    ++compared;
    worst = std::max(worst, x.d);
    if (!bound) {
      unjudged.push_back(x.experiment + " " + x.compared + " seed " + x.seed +
                         (dc ? " (its control's bound reaches the weights' size)" : " (its seed's control is missing)"));
      rows.push_back({x.experiment, x.reference, x.compared, x.seed, std::to_string(x.steps), sci(x.d, 3),
                      dc ? sci(*dc, 3) : "missing", "none", "not judged"});
      continue;
    }
    const bool ok = x.d <= *bound;
    over += !ok;
    rows.push_back({x.experiment, x.reference, x.compared, x.seed, std::to_string(x.steps), sci(x.d, 3),
                    dc ? sci(*dc, 3) : "none", sci(*bound, 3), ok ? "yes" : "**no**"});
  }
  if (!unjudged.empty()) problems.push_back("not judged: " + join(unjudged, ", "));
  Finding f;
  f.numbers = md_table({"experiment", "reference", "compared", "seed", "steps", "max rel. weight difference d",
                        "rounding control d_control", "bound", "within bound"},
                       rows, {8});
  if (!problems.empty()) missing += (missing.empty() ? "" : "; ") + join(problems, "; ");
  const std::string rule = "max(" + sci(tol, 1) + ", " + value_text(c["control_factor"]) + " x d_control)";
  if (over > 0) {
    f.verdict = Verdict::contradicted;
    f.reason = std::to_string(over) + " of " + std::to_string(compared) + " comparisons exceed their bound " + rule +
               " (largest difference " + sci(worst, 3) + ")" + (missing.empty() ? "." : "; also missing: " + missing + ".");
  } else if (!missing.empty() || compared == 0) {
    f.verdict = Verdict::inconclusive;
    f.reason = "runs missing or without saved weights: " + (missing.empty() ? std::string("no comparisons") : missing);
  } else {
    f.verdict = Verdict::supported;
    f.reason = "all " + std::to_string(compared) + " comparisons are within their bound " + rule +
               " (largest difference " + sci(worst, 3) + ").";
  }
  return f;
}

}  // namespace equivalence_criterion

const CriterionKind kEquivalence = {"equivalence", equivalence_criterion::check, equivalence_criterion::evaluate};

}  // namespace dtbench::reproduce
