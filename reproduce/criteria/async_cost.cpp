// Claim e: asynchronous SGD (a parameter server that applies each worker's gradient as it arrives; Dean et al.
// 2012) needs more epochs than synchronous SGD and more tuning of learning rate and momentum. Terms, per rank count
// K and per method (the values of `group_key`'s comma-separated keys, joined by spaces: "sync sgd", "async sgd",
// "async dcasgd" for DCASGD (Zheng et al. 2017)):
//   E(p)        the median over seeds of the epochs to the target at metaparameter point p (learning rate x
//               momentum), taken when every seed reached the target;
//   best        min over the grid of E(p): the epochs with the best tuning;
//   share       the fraction of the grid's points at which every seed reached the target;
//   spread      median over the reached points of E(p) / best: how much a point off the best costs.
// "More epochs": best(async) > best(sync). "More tuning": share(async) < share(sync), or equal shares and
// spread(async) > spread(sync). Supported: both hold for plain async against sync at every K of the grid.
// Contradicted: either fails at some K. Inconclusive: runs missing. DCASGD and the measured staleness (mean number
// of server updates between a worker's read and its push) are reported beside.
#include <algorithm>
#include <cmath>
#include <map>

#include "reproduce/criteria/kinds.hpp"
#include "reproduce/evidence.hpp"

namespace dtbench::reproduce {
namespace async_cost_criterion {

void check(const Json& c, const std::string& where) {
  check_keys(c, where, {"group_key", "sync", "async"});
  for (const char* k : {"group_key", "sync", "async"}) text_in(c, where, k);
}

// The groups it compares exist among the runs (a misspelt value was found only in the report, after the runs).
void check_experiments(const Json& c, const std::vector<Experiment>& experiments, const std::string& where) {
  check_group_values(c, experiments, where, {"sync", "async"});
}

struct Method {
  double best = INFINITY;
  int points = 0, reached = 0;
  std::vector<double> reached_epochs;
  std::vector<double> staleness;
  double share() const { return points ? double(reached) / points : 0; }
  double spread() const {
    std::vector<double> r;
    for (double e : reached_epochs) r.push_back(e / best);
    auto m = median(r);
    return m ? *m : INFINITY;
  }
};

// The decimals at which a and b print differently (2 to 6), so that a verdict resting on a small difference
// does not show two equal numbers (claim e's spreads 1.4976 and 1.5 both printed "1.50").
int telling_digits(double a, double b) {
  int d = 2;
  while (d < 6 && std::isfinite(a) && std::isfinite(b) && a != b && fixed(a, d) == fixed(b, d)) ++d;
  return d;
}

Finding evaluate(const Claim&, const Json& c, const std::vector<Experiment>& experiments,
                 const std::filesystem::path& out) {
  const std::string key = c["group_key"].get<std::string>();
  const std::string sync = c["sync"].get<std::string>(), async = c["async"].get<std::string>();
  Finding f;
  std::string missing;
  std::map<int64_t, std::map<std::string, Method>> by_k;  // K -> method -> figures
  for (const auto& camp : load_sweeps(out, experiments, missing)) {
    for (const auto& p : camp.points) {
      std::vector<double> epochs;
      bool all = true;
      int64_t k = 0;
      std::string method;
      Method* m = nullptr;
      for (const auto& r : p.runs) {
        if (r.state != "done" || !r.record) {
          all = false;
          continue;
        }
        k = r.ranks;
        method = group_text(r, key);  // "k1,k2": the values joined by spaces
        m = &by_k[k][method];
        if (r.record->time_to_accuracy) epochs.push_back(r.record->time_to_accuracy->epoch);
        else all = false;
        const Json& a = r.record->extra.contains("async") ? r.record->extra["async"] : Json();
        if (a.is_object() && a.contains("staleness_mean") && a["staleness_mean"].is_number())
          m->staleness.push_back(a["staleness_mean"].get<double>());
      }
      if (!m) continue;
      ++m->points;
      if (all && !epochs.empty()) {
        ++m->reached;
        const double e50 = *median(epochs);
        m->reached_epochs.push_back(e50);
        m->best = std::min(m->best, e50);
      }
    }
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> failed;
  bool complete = !by_k.empty();
  for (const auto& [k, methods] : by_k) {
    auto s = methods.find(sync), a = methods.find(async);
    const bool both = s != methods.end() && a != methods.end();
    // Each K's column prints with the decimals that tell its sync and async values apart.
    const int best_digits = both ? telling_digits(a->second.best, s->second.best) : 2;
    const int spread_digits = both ? telling_digits(a->second.spread(), s->second.spread()) : 2;
    const auto best_text = [&](const Method& m) {
      return std::isfinite(m.best) ? fixed(m.best, best_digits) : std::string("not reached");
    };
    for (const auto& [name, m] : methods) {
      auto st = median(m.staleness);
      rows.push_back({std::to_string(k), name, best_text(m),
                      std::to_string(m.reached) + "/" + std::to_string(m.points), fixed(m.spread(), spread_digits),
                      st ? fixed(*st, 2) : "-"});
    }
    if (!both) {
      complete = false;
      continue;
    }
    const Method &as = a->second, &sy = s->second;
    const bool more_epochs = as.best > sy.best;
    const bool more_tuning = as.share() < sy.share() || (as.share() == sy.share() && as.spread() > sy.spread());
    const std::string at = "K=" + std::to_string(k) + ": ";
    if (!more_epochs)
      failed.push_back(at + "async's best epochs are not more than sync's (" + best_text(as) + " against " +
                       best_text(sy) + ")");
    if (!more_tuning)
      failed.push_back(at + "async is not harder to tune (share " + std::to_string(as.reached) + "/" +
                       std::to_string(as.points) + " against " + std::to_string(sy.reached) + "/" +
                       std::to_string(sy.points) + ", spread " + fixed(as.spread(), spread_digits) + " against " +
                       fixed(sy.spread(), spread_digits) + ")");
  }
  f.numbers = md_table({"K", "method", "epochs to target (best point)", "grid points reaching target",
                        "spread (median / best)", "staleness (mean)"}, rows);
  if (!missing.empty() || !complete) {
    f.verdict = Verdict::inconclusive;
    f.reason = missing.empty() ? "no rank count has both a synchronous and an asynchronous grid" : "runs missing: " + missing;
  } else if (!failed.empty()) {
    f.verdict = Verdict::contradicted;
    f.reason = join(failed, "; ") + ".";
  } else {
    f.verdict = Verdict::supported;
    f.reason = "at every K, asynchronous SGD needs more epochs with its best tuning and reaches the target on less of "
               "the learning-rate x momentum grid (or loses more off its best point) than synchronous SGD.";
  }
  return f;
}

}  // namespace async_cost_criterion

const CriterionKind kAsyncCost = {"async_cost", async_cost_criterion::check, async_cost_criterion::evaluate,
                                  async_cost_criterion::check_experiments};

}  // namespace dtbench::reproduce
