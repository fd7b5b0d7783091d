#include "analysis/campaign_table.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "analysis/summary.hpp"
#include "core/error.hpp"

namespace dtbench::analysis {
namespace {

struct MetricDef {
  std::string key;
  std::string label;  // md/latex header
  bool needs_target;  // reported as "not reached" when no run reached the target
  std::function<std::optional<double>(const RunRecord& record)> value;
};

// A time-to-target metric: none when the run did not reach its target.
std::optional<double> reached(const RunRecord& r, double (*field)(const TimeToAccuracy&)) {
  if (!r.time_to_accuracy) return std::nullopt;
  return field(*r.time_to_accuracy);
}

const std::vector<MetricDef>& metric_defs() {
  static const std::vector<MetricDef> defs = {
      // None for a run that took no step (diverged at its first): it measured no throughput, and its 0 img/s moved
      // the medians and the scaling efficiency (a row read 0%, another 170%; a hunt).
      {"throughput", "throughput (img/s)", false,
       [](const RunRecord& r) {
         return r.images_per_second > 0 ? std::optional(r.images_per_second) : std::nullopt;
       }},
      {"steady_throughput", "steady throughput (img/s)", false,
       [](const RunRecord& r) { return r.steady_images_per_second; }},
      {"time_to_accuracy", "time to target (s)", true,
       [](const RunRecord& r) { return reached(r, [](const TimeToAccuracy& t) { return t.seconds; }); }},
      {"epochs_to_target", "epochs to target", true,
       [](const RunRecord& r) { return reached(r, [](const TimeToAccuracy& t) { return t.epoch; }); }},
      {"steps_to_target", "steps to target", true,
       [](const RunRecord& r) {
         return reached(r, [](const TimeToAccuracy& t) { return static_cast<double>(t.step); });
       }},
      {"final_accuracy", "final accuracy (%)", false,
       [](const RunRecord& r) -> std::optional<double> {
         const std::optional<double> a = r.final_accuracy();
         return a ? std::optional(*a * 100) : std::nullopt;
       }},
      {"scaling_efficiency", "scaling efficiency (%)", false,
       [](const RunRecord& r) -> std::optional<double> {
         auto e = r.extra.find("scaling_efficiency");
         if (e == r.extra.end() || !e->is_number()) return std::nullopt;
         return e->get<double>() * 100;
       }},
      {"exposed_comm", "exposed comm (% of step)", false,
       [](const RunRecord& r) -> std::optional<double> {
         if (r.timing.total <= 0) return std::nullopt;
         return r.timing.exposed_comm / r.timing.total * 100;
       }},
      {"b_simple", "B_simple (samples)", false,
       [](const RunRecord& r) -> std::optional<double> {
         for (auto it = r.curve.rbegin(); it != r.curve.rend(); ++it)
           if (it->b_simple) return it->b_simple;
         return std::nullopt;
       }},
      {"wall_seconds", "wall time (s)", false, [](const RunRecord& r) { return std::optional(r.wall_seconds); }},
  };
  return defs;
}

const MetricDef& metric(const std::string& key) {
  for (const auto& d : metric_defs())
    if (d.key == key) return d;
  std::string names;
  for (const auto& d : metric_defs()) names += (names.empty() ? "" : ", ") + d.key;
  throw BadInput("--metrics: unknown metric \"" + key + "\"; metrics: " + names);
}

struct Row {
  std::vector<Json> key;
  std::vector<const RunData*> runs;
};

std::string runs_cell(const Row& row) {
  std::map<std::string, size_t> n;
  for (const auto* r : row.runs) n[r->state]++;
  std::string s = std::to_string(n["done"]) + "/" + std::to_string(row.runs.size()) + " done";
  // Diverged runs are done (a rerun would diverge again) and count in every metric, with a final accuracy of 0.
  const size_t diverged = static_cast<size_t>(std::count_if(row.runs.begin(), row.runs.end(), [](const RunData* r) {
    return r->state == "done" && r->record && r->record->status == RunStatus::diverged;
  }));
  if (diverged) s += " (" + std::to_string(diverged) + " diverged)";
  for (const char* st : {"stopped", "failed", "preempted", "missing", "unreadable"})
    if (n[st]) s += ", " + std::to_string(n[st]) + " " + st;
  if (n["done"] == 0 && n["stopped"] > 0) s += " (the values are the stopped runs')";
  return s;
}

// The rank counts of a row's runs, those unknown (0) left out.
std::set<int64_t> rank_counts(const Row& row) {
  std::set<int64_t> k;
  for (const auto* r : row.runs)
    if (r->ranks > 0) k.insert(r->ranks);
  return k;
}

std::string ranks_cell(const Row& row) {
  std::string s;
  for (int64_t v : rank_counts(row)) s.append(s.empty() ? "" : ",").append(std::to_string(v));
  return s.empty() ? "-" : s;
}

std::optional<int64_t> single_ranks(const Row& row) {
  std::set<int64_t> k = rank_counts(row);
  if (k.size() != 1) return std::nullopt;
  return *k.begin();
}

// One metric over a row's done runs, with the count of done runs that had a target for the
// time-to-target metrics.
struct Cell {
  std::optional<Summary> s;
  size_t done = 0, with_target = 0;
};

// The state whose runs a row's metrics are of: its done runs, or, in a row that has none, its stopped ones (a
// population-based training member's interval, a run cut with --stop-at: the only values such a row has, which the
// runs column marks as theirs).
std::string counted_state(const Row& row) {
  const bool any_done = std::any_of(row.runs.begin(), row.runs.end(), [](const RunData* r) { return r->state == "done"; });
  return any_done ? "done" : "stopped";
}

// `done_only`: of the done runs alone, even in a row that has none (the scaling efficiency: stopped runs' throughput
// is of a part of the run, and a K0 row of stopped runs only gave a finished row 178%; a hunt).
Cell compute(const MetricDef& m, const Row& row, bool done_only = false) {
  Cell c;
  std::vector<double> v;
  const std::string counted = done_only ? "done" : counted_state(row);
  for (const auto* r : row.runs) {
    if (r->state != counted || !r->record) continue;
    ++c.done;
    if (r->record->target_accuracy > 0) ++c.with_target;
    if (auto x = m.value(*r->record)) v.push_back(*x);
  }
  c.s = summarize(v);
  return c;
}

std::string md_cell(const MetricDef& m, const Cell& c) {
  if (c.done == 0) return "-";
  if (m.needs_target && c.with_target == 0) return "no target";
  if (!c.s) return m.needs_target ? "not reached" : "-";
  std::string s = format_number(c.s->median);
  if (c.s->n > 1) s += " [" + format_number(c.s->min) + ", " + format_number(c.s->max) + "]";
  if (m.needs_target && c.s->n < c.done) s += " (" + std::to_string(c.s->n) + "/" + std::to_string(c.done) + " reached)";
  return s;
}

}  // namespace

const std::vector<std::string>& all_metrics() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& d : metric_defs()) n.push_back(d.key);
    return n;
  }();
  return names;
}

const std::vector<std::string>& default_metrics() {
  static const std::vector<std::string> names = {"throughput",     "time_to_accuracy", "epochs_to_target",
                                                 "final_accuracy", "scaling_efficiency", "exposed_comm",
                                                 "b_simple"};
  return names;
}

TextTable campaign_table(const CampaignData& c, const TableOptions& o, Format format) {
  std::vector<std::string> keys = o.group_by.empty() ? c.keys : o.group_by;
  std::vector<const MetricDef*> metrics;
  for (const auto& k : o.metrics.empty() ? default_metrics() : o.metrics) metrics.push_back(&metric(k));

  // Rows: runs grouped by their key values, in the order points appear.
  std::vector<Row> rows;
  for (const auto& p : c.points)
    for (const auto& r : p.runs) {
      std::vector<Json> key;
      for (const auto& k : keys) {
        Json v = Json();
        for (const auto& [pk, pv] : p.values)
          if (pk == k) v = pv;
        if (v.is_null()) v = key_value(r, k);
        key.push_back(v);
      }
      if (keys.empty()) key.push_back(p.id);
      auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& row) { return row.key == key; });
      if (it == rows.end()) {
        rows.push_back({key, {}});
        it = rows.end() - 1;
      }
      it->runs.push_back(&r);
    }
  // A --group-by key that no run has would pool every run into one row that looks like a result. (Unreadable records
  // hold no config to look in: the key may be theirs, and the table says they are unreadable.)
  for (size_t k = 0; k < o.group_by.size(); ++k)
    if (!rows.empty() && unreadable_records(c).empty() &&
        std::all_of(rows.begin(), rows.end(), [&](const Row& row) { return row.key[k].is_null(); }))
      throw BadInput("--group-by: no run of this campaign has the key '" + o.group_by[k] +
                     "' (a config key such as reducer.name or batch.global, slurm.nodes, ranks, status, global_batch)");

  // Scaling efficiency from throughput where records do not carry it: against the row with the
  // smallest rank count among rows that agree on every key except the rank-determining ones.
  // A key zipped with the rank count moves with it (strong scaling's per-rank batch, a learning rate scaled with
  // the nodes) when the rows give it one value per rank count; one that takes several values at one rank count (a
  // thread count zipped beside it) is a setting of its own, on which the compared rows must agree.
  std::set<std::string> rank_keys = {"ranks", "slurm.nodes", "slurm.tasks_per_node"};
  std::set<std::string> zipped;
  for (const auto& g : c.zip_groups)
    if (std::any_of(g.begin(), g.end(), [&](const std::string& k) { return rank_keys.count(k) > 0; }))
      zipped.insert(g.begin(), g.end());
  for (size_t k = 0; k < keys.size(); ++k) {
    if (!zipped.count(keys[k]) || rank_keys.count(keys[k])) continue;
    std::map<int64_t, std::set<std::string>> values;  // rank count -> the key's values (as JSON text)
    for (const Row& row : rows)
      if (const auto kr = single_ranks(row)) values[*kr].insert(row.key[k].dump());
    if (std::all_of(values.begin(), values.end(), [](const auto& v) { return v.second.size() == 1; }))
      rank_keys.insert(keys[k]);
  }
  const MetricDef& thr = metric("throughput");
  std::vector<std::optional<double>> computed_eff(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    auto ki = single_ranks(rows[i]);
    Cell ti = compute(thr, rows[i], /*done_only=*/true);
    if (!ki || !ti.s) continue;
    auto base = [&](const Row& r) {
      std::vector<Json> b;
      for (size_t k = 0; k < keys.size(); ++k)
        if (!rank_keys.count(keys[k])) b.push_back(r.key[k]);
      return b;
    };
    // K0 is the group's smallest rank count whether or not its runs finished: with none done there, the baseline
    // moved to the next rank count unsaid, and that row read 100% (found by a hunt); the group then has none.
    std::optional<int64_t> k0;
    double t0 = 0;
    std::set<int64_t> ks;  // rank counts with a throughput in this row's group: one alone gives nothing to compare
    for (const auto& other : rows) {
      auto ko = single_ranks(other);
      if (!ko || base(other) != base(rows[i])) continue;
      Cell to = compute(thr, other, /*done_only=*/true);
      if (to.s) ks.insert(*ko);
      if (!k0 || *ko < *k0) k0 = *ko, t0 = to.s ? to.s->median : 0;
      else if (*ko == *k0 && t0 <= 0 && to.s) t0 = to.s->median;  // another row at K0 (nodes x tasks) that has one
    }
    if (ks.size() > 1 && t0 > 0) computed_eff[i] = (ti.s->median / double(*ki)) / (t0 / double(*k0)) * 100;
  }

  TextTable t;
  t.caption = "Campaign " + c.name + ": one row per " + (o.group_by.empty() ? "sweep point" : "group") +
              "; cells give the median [min, max] over repeats.";
  // A key of its own when the rank count is one (a folder of records without an index, --group-by ranks): then it
  // is not shown twice.
  const bool ranks_keyed = std::find(keys.begin(), keys.end(), "ranks") != keys.end();
  for (const auto& k : keys) t.header.push_back(k);
  if (keys.empty()) t.header.push_back("point");
  if (!ranks_keyed) t.header.push_back("ranks");
  t.header.push_back("runs");
  size_t key_cols = t.header.size();
  for (const auto* m : metrics) {
    if (format == Format::csv) {
      for (const char* suffix : {"_median", "_min", "_max", "_n"}) t.header.push_back(m->key + suffix);
    } else {
      t.header.push_back(m->label);
    }
  }
  t.right.assign(t.header.size(), true);
  for (size_t k = 0; k < key_cols; ++k) t.right[k] = t.header[k] == "ranks";  // the ranks column is numeric

  bool used_computed_eff = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    std::vector<std::string> cells;
    for (const auto& v : row.key) cells.push_back(key_cell(v));
    if (!ranks_keyed) cells.push_back(ranks_cell(row));
    cells.push_back(runs_cell(row));
    for (const auto* m : metrics) {
      Cell cell = compute(*m, row);
      if (m->key == "scaling_efficiency" && !cell.s && computed_eff[i]) {
        cell.s = Summary{*computed_eff[i], *computed_eff[i], *computed_eff[i], 1};
        used_computed_eff = true;
      }
      if (format == Format::csv) {
        if (cell.s) {
          // Whole, for the programs that read CSV: 4 digits cut 12,345,678 images/s to 1.235e+07 (a hunt).
          for (double v : {cell.s->median, cell.s->min, cell.s->max}) cells.push_back(exact_number(v));
          cells.push_back(std::to_string(cell.s->n));
        } else {
          cells.insert(cells.end(), {"", "", "", "0"});
        }
      } else {
        cells.push_back(md_cell(*m, cell));
      }
    }
    t.rows.push_back(std::move(cells));
  }
  for (const auto& problem : unreadable_records(c)) t.notes.push_back("Unreadable record (in no metric): " + problem);
  if (used_computed_eff)
    t.notes.push_back("Scaling efficiency = (throughput / K) / (throughput / K0), medians, K0 = the smallest rank "
                      "count among rows that agree on every other key.");
  return t;
}

}  // namespace dtbench::analysis
