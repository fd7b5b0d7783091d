#include "analysis/campaign_data.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "core/campaign_index.hpp"
#include "core/config.hpp"
#include "core/error.hpp"

namespace dtbench::analysis {
namespace fs = std::filesystem;
namespace {

// A run config from the campaign's configs/ folder: {} when it is gone (the index's values still check the record),
// and `problem` when it is there but is no config (not an object, or an empty one): a damaged one was taken as gone,
// and a record of another config then counted for the run without a word (found by a hunt; a rerun of the sweep
// writes the file again).
struct GivenConfig {
  Json config = Json::object();
  std::string problem;
};

GivenConfig given_config(const fs::path& p) {
  std::error_code ec;
  if (fs::symlink_status(p, ec).type() == fs::file_type::not_found) return {};
  try {
    Json c = read_json_file(p.string(), "run config");
    if (c.is_object() && !c.empty()) return {std::move(c), ""};
    return {Json::object(), p.string() + (c.is_object() ? ": the run's config is an empty object"
                                                         : ": the run's config is not a JSON object")};
  } catch (const BadInput& e) {
    return {Json::object(), e.what()};
  }
}

// Where `config` disagrees with a point's axis values: the first key, or "" when it agrees. A value is the config's
// at its dotted key; a section's value (an axis over whole sections) is the leaves it sets, the config holding the
// section's defaults besides; numbers compare as numbers (2 and 2.0). Slurm keys are the point's resources, not
// the config's.
std::string value_differs(const Json& config, const std::vector<std::pair<std::string, Json>>& values) {
  const std::function<bool(const Json&, const Json&)> within = [&](const Json& v, const Json& c) {
    if (v.is_object()) {
      if (!c.is_object()) return false;
      for (auto it = v.begin(); it != v.end(); ++it)
        if (!c.contains(it.key()) || !within(it.value(), c[it.key()])) return false;
      return true;
    }
    if (v.is_number() && c.is_number()) return v.get<double>() == c.get<double>();
    return v == c;
  };
  for (const auto& [key, value] : values) {
    if (key.rfind("slurm.", 0) == 0) continue;
    const Json::json_pointer at(config::dotted_pointer(key));
    if (!config.contains(at) || !within(value, config.at(at))) return key;
  }
  return "";
}

void fill_from_record(RunData& r, RunRecord rec) {
  r.config = rec.config;
  r.ranks = rec.ranks;
  r.state = !rec.done() ? to_string(rec.status) : rec.stopped_early() ? "stopped" : "done";
  r.record = std::move(rec);
}

void unreadable(RunData& r, const std::string& problem) {
  r.state = "unreadable";
  r.problem = problem;
}

// Leaves of a JSON object as dot paths.
void flatten(const Json& j, const std::string& prefix, std::map<std::string, Json>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    return;
  }
  out[prefix] = j;
}

CampaignData from_campaign(const fs::path& dir) {
  const CampaignIndex idx = read_campaign_index(dir / "campaign.json");
  CampaignData c;
  c.name = idx.name;
  c.files.emplace_back("the campaign index", dir / "campaign.json");
  c.files.emplace_back("the campaign's spec", dir / "spec.json");  // the sweep's copy, and its Slurm jobs file
  c.files.emplace_back("the campaign's jobs file", dir / "jobs.json");
  for (const auto& p : idx.points)
    for (const auto& r : p.runs) {
      c.files.emplace_back("run " + r.name + "'s config", dir / r.config);
      c.files.emplace_back("run " + r.name + "'s record", dir / r.record);
      if (!r.script.empty()) c.files.emplace_back("run " + r.name + "'s sbatch script", dir / r.script);
      // The files beside its record (README: Run records): its MLLOG file, saved weights and console logs.
      for (const char* beside : {".mllog", ".weights", ".out", ".err"})
        c.files.emplace_back("run " + r.name + "'s " + (beside + 1) + " file", beside_record(dir / r.record, beside));
    }
  for (const auto& a : idx.axes) {
    c.keys.insert(c.keys.end(), a.keys.begin(), a.keys.end());
    if (a.keys.size() > 1) c.zip_groups.push_back(a.keys);
  }
  for (size_t i = 0; i < idx.points.size(); ++i) {
    const auto& p = idx.points[i];
    const std::string at = (dir / "campaign.json").string() + ": /points/" + std::to_string(i);
    // Points are distinct: two of the same values pooled their runs' medians in one row (an index edited; a hunt).
    for (size_t j = 0; j < i; ++j)
      if (idx.points[j].values == p.values && idx.points[j].slurm == p.slurm)
        throw BadInput(at + "/values: the same as /points/" + std::to_string(j) + "'s; each point of a campaign is " +
                       "another setting");
    PointData pd;
    pd.id = p.id;
    pd.values = p.values;
    for (const auto& r : p.runs) {
      RunData rd;
      rd.name = r.name;
      rd.record_path = dir / r.record;
      rd.ranks = p.ranks;
      rd.slurm = p.slurm;
      rd.state = "missing";
      // The run's config file, read once: what its record is checked against, and the run's config without one.
      const auto [given, config_problem] = given_config(dir / r.config);
      // The index and the configs it names agree on the point's values (the table labels rows by the index's).
      if (!given.empty())
        if (const std::string key = value_differs(given, p.values); !key.empty())
          throw BadInput(at + "/values/" + key + ": differs from " + (dir / r.config).string() + "'s " + key +
                         " (the index and its configs contradict each other)");
      // Missing only when nothing is there: a dangling link or a path that cannot be examined is unreadable.
      std::error_code ec;
      if (!config_problem.empty()) {
        unreadable(rd, config_problem + "; the run's record cannot be checked against its config");
      } else if (fs::symlink_status(rd.record_path, ec).type() != fs::file_type::not_found) {
        RecordFile rec = read_run_record(rd.record_path);
        // A record is its run's only: another run's, copied or moved into this slot, would count as this run (a
        // claim's verdict turned on two records of another campaign), and one record in two slots twice.
        // Nor is a record of another config or rank count than the index gives the run (a record with its name
        // and config.name edited moved runs between two groups of a claim's table without a word), as a rerun of
        // the sweep refuses it. An index whose config file is gone still has its point's values, which the record's
        // config must hold (a record of another point was counted under this one's label; a hunt).
        const std::string differs =
            rec.record && !given.empty() ? config_difference(rec.record->config, given) : std::string();
        if (rec.record && rec.record->name != r.name)
          unreadable(rd, rd.record_path.string() + ": the record of run '" + rec.record->name + "', not of run '" +
                             r.name + "' (copied or moved here?)");
        else if (!differs.empty())
          unreadable(rd, rd.record_path.string() + ": made from another config than " + (dir / r.config).string() +
                             " (first difference at " + differs + ")");
        else if (const std::string key = rec.record ? value_differs(rec.record->config, p.values) : ""; !key.empty())
          unreadable(rd, rd.record_path.string() + ": its config's " + key + " is not the campaign index's value for " +
                             "point " + p.id + " (made from another config?)");
        else if (rec.record && p.ranks > 0 && rec.record->ranks != p.ranks)
          unreadable(rd, rd.record_path.string() + ": made on " + std::to_string(rec.record->ranks) +
                             " ranks, where the campaign index runs it on " + std::to_string(p.ranks));
        else if (rec.record) fill_from_record(rd, std::move(*rec.record));
        else unreadable(rd, rec.problem);
      }
      if (!rd.record) rd.config = given;
      pd.runs.push_back(std::move(rd));
    }
    c.points.push_back(std::move(pd));
  }
  return c;
}

CampaignData from_records(const fs::path& path) {
  std::vector<RunData> runs, unreadable_runs;
  auto add_unreadable = [&](const fs::path& p, const std::string& problem) {
    RunData r;
    r.record_path = p;
    r.name = p.stem().string();
    r.ranks = 0;  // unknown
    unreadable(r, problem);
    unreadable_runs.push_back(std::move(r));
  };
  std::map<std::string, fs::path> seen;  // a record's text as read -> its file
  auto add = [&](const fs::path& p) {
    RecordFile rec = read_run_record(p);
    if (rec.other_kind) return;  // a config, a spec or an index: JSON, but no record
    if (!rec.record) return add_unreadable(p, rec.problem);
    // One run, one record: a copy (the same record, wall times and provenance included) would be counted twice in
    // every median. Names alone repeat across campaigns (p0-s1 of two sweeps), so the whole record is compared.
    if (const auto [at, added] = seen.emplace(rec.record->to_json().dump(), p); !added)
      throw BadInput(p.string() + ": the same record as " + at->second.string() + " (run '" + rec.record->name +
                     "'); a run is counted once: move the copy away");
    RunData r;
    r.record_path = p;
    r.name = rec.record->name;
    fill_from_record(r, std::move(*rec.record));
    runs.push_back(std::move(r));
  };
  std::vector<fs::path> files;  // the record-named files read
  if (fs::is_directory(path)) {
    // An entry that cannot be looked at (a loop of links, no permission) is an unreadable record when its name says
    // record, and nothing otherwise; a folder that cannot be listed is unreadable itself (its records would be
    // missing without a word); the table of the others is still printed. Links to folders are not followed.
    std::function<void(const fs::path&)> walk = [&](const fs::path& dir) {
      std::error_code ec;
      fs::directory_iterator it(dir, ec), end;
      for (; !ec && it != end; it.increment(ec)) {
        const fs::path& p = it->path();
        std::error_code kind;
        const fs::file_status st = it->symlink_status(kind);
        if (!kind && fs::is_directory(st)) {
          walk(p);
          continue;
        }
        // A sweep moves a failed run's record into runs/failed/ so that a rerun redoes it: skipped beneath the
        // folder given, read when that folder is the one given.
        if (p.extension() != ".json" || (dir != path && dir.filename() == "failed")) continue;
        const bool regular = it->is_regular_file(kind);
        if (kind) add_unreadable(p, p.string() + ": " + kind.message());
        else if (regular) files.push_back(p);
        else add_unreadable(p, p.string() + ": not a regular file (a pipe, a device, a socket or a link to a folder)");
      }
      if (ec) add_unreadable(dir, dir.string() + ": the folder could not be listed: " + ec.message());
    };
    walk(path);
    std::sort(files.begin(), files.end());
    for (const auto& f : files) add(f);
    // In file order, as the readable ones (the walk meets them in the folder's own order).
    std::sort(unreadable_runs.begin(), unreadable_runs.end(),
              [](const RunData& a, const RunData& b) { return a.record_path < b.record_path; });
  } else {
    files.push_back(path);
    add(path);
  }
  if (runs.empty() && unreadable_runs.empty()) {
    // A campaign's own index given as the file: its folder is what the table reads ("no campaign.json here" was said
    // of campaign.json itself; a hunt).
    if (path.filename() == "campaign.json")
      throw BadInput(path.string() + ": a campaign's index, not a run record: give its folder, " +
                     (path.has_parent_path() ? path.parent_path().string() : std::string(".")));
    throw BadInput(path.string() + ": no campaign.json and no run records here");
  }
  std::vector<std::pair<std::string, fs::path>> read;
  for (const auto& f : files) {
    read.emplace_back("a JSON file the table reads", f);
    // And the files beside each record, as a campaign's (an --output there replaced a run's MLLOG; a hunt).
    for (const char* beside : {".mllog", ".weights", ".out", ".err"})
      read.emplace_back(std::string("the ") + (beside + 1) + " file beside the record " + f.string(), beside_record(f, beside));
  }

  // The keys that vary: every config leaf whose value differs between records, plus the rank count.
  std::vector<std::map<std::string, Json>> flat(runs.size());
  std::set<std::string> all;
  for (size_t i = 0; i < runs.size(); ++i) {
    flatten(runs[i].config, "", flat[i]);
    for (const auto& [k, v] : flat[i]) all.insert(k);
  }
  CampaignData c;
  c.name = path.filename().string();
  c.files = std::move(read);
  for (const auto& k : all) {
    if (k == "seed" || k == "name" || k.rfind("output.", 0) == 0) continue;
    std::set<std::string> values;
    for (const auto& f : flat) values.insert(f.count(k) ? f.at(k).dump() : "null");
    if (values.size() > 1) c.keys.push_back(k);
  }
  std::set<int64_t> ranks;
  for (const auto& r : runs) ranks.insert(r.ranks);
  if (ranks.size() > 1) c.keys.push_back("ranks");

  std::map<std::string, size_t> index;  // point key -> position in c.points
  for (auto& r : runs) {
    std::vector<std::pair<std::string, Json>> values;
    for (const auto& k : c.keys) values.emplace_back(k, key_value(r, k));
    std::string id = Json(values).dump();
    auto it = index.find(id);
    if (it == index.end()) {
      it = index.emplace(id, c.points.size()).first;
      c.points.push_back({"p" + std::to_string(c.points.size()), values, {}});
    }
    c.points[it->second].runs.push_back(std::move(r));
  }
  // Records that cannot be read have no config to place them by: one row of their own.
  if (!unreadable_runs.empty()) {
    std::vector<std::pair<std::string, Json>> values;
    for (const auto& k : c.keys) values.emplace_back(k, Json());
    c.points.push_back({"unreadable", values, std::move(unreadable_runs)});
  }
  return c;
}

}  // namespace

Json campaign_json(const CampaignData& c) {
  Json points = Json::array();
  for (const auto& p : c.points) {
    Json values = Json::object();
    for (const auto& [key, v] : p.values) values[key] = v;
    Json runs = Json::array();
    for (const auto& r : p.runs)
      runs.push_back({{"name", r.name},
                      {"record_path", r.record_path.string()},
                      {"state", r.state},
                      {"problem", r.problem},
                      {"ranks", r.ranks},
                      {"config", r.config},
                      {"slurm", r.slurm},
                      // As --group-by takes them (from the config where there is no record), so that plot.py need
                      // not work them out again.
                      {"global_batch", key_value(r, "global_batch")},
                      {"per_rank_batch", key_value(r, "per_rank_batch")},
                      {"record", r.record ? r.record->to_json() : Json()}});
    points.push_back({{"id", p.id}, {"values", values}, {"runs", runs}});
  }
  return {{"kind", "dtbench-campaign-data"},
          {"name", c.name},
          {"keys", c.keys},
          {"zip_groups", c.zip_groups},
          {"points", points},
          {"unreadable", unreadable_records(c)}};
}

std::vector<std::string> unreadable_records(const CampaignData& c) {
  std::vector<std::string> problems;
  for (const auto& p : c.points)
    for (const auto& r : p.runs)
      if (r.state == "unreadable") problems.push_back(r.problem);
  return problems;
}

bool key_from_record(const std::string& key) {
  return key == "status" || key == "global_batch" || key == "per_rank_batch";
}

namespace {

// A positive integer at `pointer` of a run's config, else 0 (a config of another shape gives none).
int64_t config_count(const RunData& run, const char* pointer) {
  const Json::json_pointer at(pointer);
  return run.config.is_object() && run.config.contains(at) && run.config[at].is_number_integer()
             ? std::max<int64_t>(0, run.config[at].get<int64_t>())
             : 0;
}

// The data-parallel replicas of a run: its ranks over each replica's model-parallel x pipeline group, as
// config::replicas counts them (analysis reads configs through core only).
int64_t config_replicas(const RunData& run) {
  const int64_t group = std::max<int64_t>(1, config_count(run, "/parallel/model_parallel")) *
                        std::max<int64_t>(1, config_count(run, "/parallel/pipeline_stages"));
  return std::max<int64_t>(1, run.ranks / group);
}

// A run's global batch from its config where it has no record (missing, or failed before it wrote one), as
// config::global_batch gives it: /batch/global, else /batch/per_rank x its replicas; null when neither is a positive
// integer. Grouped by global_batch, such runs were pooled in a row "-", and each batch's row read "5/5 done" where
// one of 6 was missing (a hunt).
Json config_global_batch(const RunData& run) {
  if (const int64_t global = config_count(run, "/batch/global"); global > 0) return global;
  if (const int64_t per_rank = config_count(run, "/batch/per_rank"); per_rank > 0 && run.ranks > 0)
    return per_rank * config_replicas(run);
  return Json();
}

}  // namespace

Json key_value(const RunData& run, const std::string& key) {
  if (key == "ranks") return run.ranks > 0 ? Json(run.ranks) : Json();
  if (key == "status") return run.record ? to_string(run.record->status) : "missing";
  if (key == "global_batch") return run.record ? Json(run.record->global_batch) : config_global_batch(run);
  if (key == "per_rank_batch") {
    if (run.record) return run.record->per_rank_batch;
    if (const int64_t per_rank = config_count(run, "/batch/per_rank"); per_rank > 0) return per_rank;
    const Json global = config_global_batch(run);
    return global.is_null() || run.ranks <= 0 ? Json() : Json(global.get<int64_t>() / config_replicas(run));
  }
  const Json* node = &run.config;
  std::string path = key;
  if (key.rfind("slurm.", 0) == 0) {
    node = &run.slurm;
    path = key.substr(6);
  }
  std::stringstream ss(path);
  std::string word;
  while (std::getline(ss, word, '.')) {
    if (!node->is_object() || !node->contains(word)) return Json();
    node = &(*node)[word];
  }
  return *node;
}

CampaignData load_campaign(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw BadInput(path.string() + ": " + (ec ? ec.message() : "no such file or folder"));
  const bool folder = fs::is_directory(path, ec);
  if (folder && fs::exists(path / "campaign.json", ec)) return from_campaign(path);
  if (ec) throw BadInput(path.string() + ": " + ec.message());
  return from_records(path);
}

}  // namespace dtbench::analysis
