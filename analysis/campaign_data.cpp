#include "analysis/campaign_data.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"

namespace dtbench::analysis {
namespace fs = std::filesystem;
namespace {

std::optional<Json> try_read(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return std::nullopt;
  std::stringstream b;
  b << in.rdbuf();
  try {
    return Json::parse(b.str());
  } catch (const Json::parse_error&) {
    return std::nullopt;
  }
}

Json read_or_throw(const fs::path& p) {
  auto j = try_read(p);
  if (!j) throw BadInput(p.string() + ": cannot read or not valid JSON");
  return *j;
}

bool is_record(const Json& j) { return j.is_object() && j.value("kind", "") == "dtbench-run-record"; }

void fill_from_record(RunData& r, const Json& rec) {
  r.record = rec;
  r.config = rec.value("config", Json::object());
  r.ranks = rec.value("ranks", int64_t{1});
  r.state = state_of_status(rec.value("status", "failed"));
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
  Json idx = read_or_throw(dir / "campaign.json");
  CampaignData c;
  c.name = idx.value("name", dir.filename().string());
  for (const auto& a : idx.value("axes", Json::array())) {
    std::vector<std::string> keys;
    for (const auto& k : a.value("keys", Json::array())) keys.push_back(k.get<std::string>());
    c.keys.insert(c.keys.end(), keys.begin(), keys.end());
    if (keys.size() > 1) c.zip_groups.push_back(keys);
  }
  for (const auto& p : idx.value("points", Json::array())) {
    PointData pd;
    pd.id = p.value("id", "");
    for (auto it = p["values"].begin(); it != p["values"].end(); ++it) pd.values.emplace_back(it.key(), it.value());
    for (const auto& r : p.value("runs", Json::array())) {
      RunData rd;
      rd.name = r.value("name", "");
      rd.record_path = dir / r.value("record", "");
      rd.ranks = p.value("ranks", int64_t{1});
      rd.slurm = p.value("slurm", Json::object());
      rd.state = "missing";
      auto rec = try_read(rd.record_path);
      if (rec && is_record(*rec)) {
        fill_from_record(rd, *rec);
      } else {
        auto cfg = try_read(dir / r.value("config", ""));
        rd.config = cfg ? *cfg : Json::object();
      }
      pd.runs.push_back(std::move(rd));
    }
    c.points.push_back(std::move(pd));
  }
  return c;
}

CampaignData from_records(const fs::path& path) {
  std::vector<RunData> runs;
  auto add = [&](const fs::path& p) {
    auto j = try_read(p);
    if (!j || !is_record(*j)) return;
    RunData r;
    r.name = j->value("name", p.stem().string());
    r.record_path = p;
    fill_from_record(r, *j);
    runs.push_back(std::move(r));
  };
  if (fs::is_directory(path)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(path))
      if (e.is_regular_file() && e.path().extension() == ".json" && e.path().parent_path().filename() != "failed")
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) add(f);
  } else {
    add(path);
  }
  if (runs.empty()) throw BadInput(path.string() + ": no campaign.json and no run records here");

  // The keys that vary: every config leaf whose value differs between records, plus the rank count.
  std::vector<std::map<std::string, Json>> flat(runs.size());
  std::set<std::string> all;
  for (size_t i = 0; i < runs.size(); ++i) {
    flatten(runs[i].config, "", flat[i]);
    for (const auto& [k, v] : flat[i]) all.insert(k);
  }
  CampaignData c;
  c.name = path.filename().string();
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
  return c;
}

}  // namespace

std::string state_of_status(const std::string& status) {
  if (status == "completed" || status == "reached-target" || status == "diverged") return "done";
  if (status == "preempted") return "preempted";
  return "failed";
}

Json key_value(const RunData& run, const std::string& key) {
  if (key == "ranks") return run.ranks;
  if (key == "status") return run.record ? (*run.record)["status"] : Json("missing");
  if (key == "global_batch" || key == "per_rank_batch") return run.record ? run.record->value(key, Json()) : Json();
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
  if (!fs::exists(path)) throw BadInput(path.string() + ": no such file or folder");
  if (fs::is_directory(path) && fs::exists(path / "campaign.json")) return from_campaign(path);
  return from_records(path);
}

}  // namespace dtbench::analysis
