#include "reproduce/evidence.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>

#include "analysis/summary.hpp"
#include "slurm/expand.hpp"
#include "slurm/spec.hpp"
#include "analysis/text_table.hpp"
#include "core/config.hpp"
#include "core/run_record.hpp"
#include "core/saved_weights.hpp"

namespace fs = std::filesystem;

namespace dtbench::reproduce {

namespace {

// "name (state), ..." of the runs that are not done, at most `limit` named, then "and N more"; empty when all are.
std::string runs_not_done(const analysis::CampaignData& c, size_t limit) {
  std::string s;
  size_t n = 0;
  for (const auto& p : c.points)
    for (const auto& r : p.runs) {
      if (r.state == "done") continue;
      if (++n <= limit) s += (s.empty() ? "" : ", ") + r.name + " (" + r.state + ")";
    }
  if (n > limit) s += " and " + std::to_string(n - limit) + " more";
  return s;
}

}  // namespace

std::vector<analysis::CampaignData> load_sweeps(const fs::path& out, const std::vector<Experiment>& experiments,
                                                std::string& missing, std::map<std::string, SpecRun>* spec_runs) {
  std::vector<analysis::CampaignData> camps;
  auto note = [&](const std::string& what) { missing += (missing.empty() ? "" : "; ") + what; };
  for (const auto& e : experiments) {
    if (e.kind != "sweep") continue;
    if (!fs::is_regular_file(out / e.name / "campaign.json")) {
      note(e.name + ": not run");
      continue;
    }
    camps.push_back(analysis::load_campaign(out / e.name));
    std::string nd = runs_not_done(camps.back(), 8);
    if (!nd.empty()) note(e.name + ": " + nd);
    // The campaign must be the spec's, whole: its index names the spec's campaign (not another scale's) and lists
    // exactly the spec's runs (an index with points deleted judged the claim on the rest, without a word).
    const slurm::Spec spec = slurm::load_spec(e.spec);
    if (camps.back().name != spec.name) {  // another scale's or spec's runs judge nothing here
      note(e.name + ": its campaign.json is campaign '" + camps.back().name + "', not the spec's '" + spec.name + "'");
      camps.pop_back();
      continue;
    }
    std::set<std::string> listed, specified;
    std::map<std::string, size_t> spec_point;  // run name -> its point's place in the spec
    for (const auto& p : camps.back().points)
      for (const auto& r : p.runs) listed.insert(r.name);
    const std::vector<slurm::Point> points = slurm::expand(spec, out / e.name / "runs");
    for (size_t i = 0; i < points.size(); ++i)
      for (const slurm::Run& r : points[i].runs) {
        specified.insert(r.name), spec_point[r.name] = i;
        if (spec_runs) (*spec_runs)[spec.name + "/" + r.name] = {r.config, points[i].ranks};
      }
    const auto differ = [&](const std::set<std::string>& a, const std::set<std::string>& b, const char* what) {
      std::vector<std::string> only;
      std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(only));
      if (only.empty()) return;
      std::string names;
      for (size_t i = 0; i < only.size() && i < 4; ++i) names += (i ? ", " : "") + only[i];
      if (only.size() > 4) names += " and " + std::to_string(only.size() - 4) + " more";
      note(e.name + ": " + std::to_string(only.size()) + " run" + (only.size() == 1 ? " " : "s ") + what + " (" + names +
           ")");
    };
    differ(specified, listed, "of the spec not in its campaign.json");
    differ(listed, specified, "in its campaign.json not of the spec");
    for (auto& p : camps.back().points)  // and those judge nothing either
      p.runs.erase(std::remove_if(p.runs.begin(), p.runs.end(),
                                  [&](const analysis::RunData& r) { return !specified.count(r.name); }),
                   p.runs.end());
    // In the spec's order, whatever the index's: a criterion's reference is the spec's first point (an index with its
    // points reversed made claim a compare every run with K=8's; found by a hunt).
    const auto place = [&](const analysis::PointData& p) { return p.runs.empty() ? points.size() : spec_point[p.runs.front().name]; };
    std::stable_sort(camps.back().points.begin(), camps.back().points.end(),
                     [&](const analysis::PointData& a, const analysis::PointData& b) { return place(a) < place(b); });
  }
  return camps;
}

std::vector<float> saved_parameters(const analysis::RunData& run, std::string& problem) {
  if (!run.record) {
    problem = run.name + ": no record";
    return {};
  }
  std::vector<float> v = read_saved_weights(*run.record, run.record_path, problem);
  if (v.empty()) return v;
  const auto params = run.record->extra["weights"]["parameters"].get<uint64_t>();
  v.resize(params);  // the parameters, which the claims compare
  // A finished run's weights are finite (a run whose weights are not ends as diverged): NaN or inf here is a damaged
  // file, which no difference may be computed from (std::max skips NaN: a NaN file compared as equal).
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i])) {
      problem = beside_record(run.record_path, ".weights").string() + ": float " + std::to_string(i) + " is not finite (" + (std::isnan(v[i]) ? "NaN" : "inf") +
                "), in the weights of a run recorded as finished";
      return {};
    }
  return v;
}

BatchSeries batch_series(const analysis::PointData& p, const std::string& group_key,
                         const std::function<std::optional<double>(const RunRecord&)>& value, std::string& missing) {
  BatchSeries s;
  for (const auto& r : p.runs) {
    if (r.state != "done" || !r.record) continue;
    auto v = value(*r.record);
    if (!v) {  // a batch that vanished from its group's row moved the largest usable batch without a word
      missing += (missing.empty() ? "" : "; ") + r.name + " (finished without a value: no evaluation in its curve)";
      continue;
    }
    s[group_key + "=" + group_text(r, group_key)][r.record->global_batch].push_back(*v);
  }
  return s;
}

BatchSeries batch_series(const std::vector<analysis::CampaignData>& camps, const std::string& group_key,
                         const std::function<std::optional<double>(const RunRecord&)>& value, std::string& missing) {
  BatchSeries s;
  for (const auto& c : camps)
    for (const auto& p : c.points)
      for (auto& [g, by_batch] : batch_series(p, group_key, value, missing))
        for (auto& [b, v] : by_batch) s[g][b].insert(s[g][b].end(), v.begin(), v.end());
  return s;
}

Json batch_figure(const std::string& kind, const std::string& y_label, const BatchSeries& s) {
  Json series = Json::array();
  for (const auto& [label, by_batch] : s) {
    Json one = {{"label", label}, {"batch", Json::array()}, {"median", Json::array()}, {"min", Json::array()},
                {"max", Json::array()}};
    for (const auto& [batch, values] : by_batch) {
      auto sum = analysis::summarize(values);
      one["batch"].push_back(batch);
      one["median"].push_back(sum->median);
      one["min"].push_back(sum->min);
      one["max"].push_back(sum->max);
    }
    series.push_back(one);
  }
  return {{"kind", kind}, {"y", y_label}, {"series", series}};
}

std::string group_text(const analysis::RunData& run, const std::string& keys) {
  std::string text;
  for (size_t a = 0, b; a <= keys.size(); a = b + 1) {
    b = std::min(keys.find(',', a), keys.size());
    if (a > 0) text += ' ';
    text += value_text(analysis::key_value(run, keys.substr(a, b - a)));
  }
  return text;
}

std::string value_text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("name") && v["name"].is_string()) {
    std::string s = v["name"].get<std::string>();
    for (auto it = v.begin(); it != v.end(); ++it)
      if (it.key() != "name") s += " " + it.key() + "=" + value_text(it.value());
    return s;
  }
  return v.dump();
}

std::string fixed(double v, int digits) { return analysis::fixed_text(v, digits); }

std::string sci(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", std::max(digits - 1, 0), v);
  return buf;
}

std::string md_table(std::vector<std::string> header, std::vector<std::vector<std::string>> rows,
                     const std::vector<size_t>& markdown) {
  // A header over no rows reads as a table that lost its contents: say that no record gave a row.
  if (rows.empty()) return "No record gave a row of this table (the verdict's reason names what is missing).\n";
  analysis::TextTable t;
  t.markdown.assign(header.size(), false);
  for (size_t c : markdown)
    if (c < t.markdown.size()) t.markdown[c] = true;
  t.header = std::move(header);
  t.rows = std::move(rows);
  return analysis::render(t, analysis::Format::md);
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string s;
  for (const auto& x : items) {
    if (!s.empty()) s += sep;
    s += x;
  }
  return s;
}

std::optional<double> median(std::vector<double> v) {
  auto s = analysis::summarize(std::move(v));
  if (!s) return std::nullopt;
  return s->median;
}

}  // namespace dtbench::reproduce
