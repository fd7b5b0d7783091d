#include "core/campaign_index.hpp"

#include <limits>
#include <map>
#include <tuple>

#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace dtbench {
namespace {

constexpr const char* kKind = "dtbench-campaign";
constexpr int64_t kMaxCount = std::numeric_limits<int>::max();  // ranks, repeats, array tasks

CampaignIndex::Run run_from(const JsonFields& f) {
  f.only({"name", "seed", "config", "record", "script", "array_task"});
  CampaignIndex::Run r;
  r.name = f.string("name");
  r.seed = f.integer("seed");
  r.config = f.string("config");
  r.record = f.string("record");
  r.script = f.string("script");
  // A path to a file: "" (or a folder's "x/") named the campaign folder itself, read as a record (exit 1).
  for (const auto& [key, path] : {std::pair{"config", r.config}, {"record", r.record}})
    if (path.empty() || path.back() == '/' || !std::filesystem::path(path).has_filename())
      throw BadInput(f.pointer(key) + ": expected a file's path, got \"" + path + "\"");
  if (f.has("array_task")) r.array_task = f.integer("array_task", 0, kMaxCount);
  return r;
}

CampaignIndex::Point point_from(const JsonFields& f) {
  f.only({"id", "label", "values", "ranks", "slurm", "runs"});
  CampaignIndex::Point p;
  p.id = f.string("id");
  p.label = f.string("label");
  const Json& values = f.object("values");
  for (auto it = values.begin(); it != values.end(); ++it) p.values.emplace_back(it.key(), it.value());
  p.ranks = f.integer("ranks", 1, kMaxCount);
  p.slurm = f.object("slurm");
  for (const JsonFields& r : f.items("runs")) p.runs.push_back(run_from(r));
  return p;
}

}  // namespace

Json CampaignIndex::to_json() const {
  Json idx;
  idx["kind"] = kKind;
  idx["name"] = name;
  idx["description"] = description;
  idx["written_utc"] = written_utc;
  idx["generated_by"] = generated_by;
  Json axes_json = Json::array();
  for (const auto& a : axes) axes_json.push_back({{"pointer", a.pointer}, {"keys", a.keys}});
  idx["axes"] = axes_json;
  idx["repeats"] = repeats;
  idx["program"] = program;
  Json points_json = Json::array();
  for (const auto& p : points) {
    Json values = Json::object();
    for (const auto& [key, v] : p.values) values[key] = v;
    Json runs = Json::array();
    for (const auto& r : p.runs) {
      Json jr = {{"name", r.name}, {"seed", r.seed}, {"config", r.config}, {"record", r.record}, {"script", r.script}};
      if (r.array_task >= 0) jr["array_task"] = r.array_task;
      runs.push_back(jr);
    }
    points_json.push_back({{"id", p.id},
                           {"label", p.label},
                           {"values", values},
                           {"ranks", p.ranks},
                           {"slurm", p.slurm},
                           {"runs", runs}});
  }
  idx["points"] = points_json;
  return idx;
}

CampaignIndex CampaignIndex::from_json(const Json& j) {
  JsonFields f(j, "");
  if (f.string("kind") != kKind) throw_wrong_type(f.pointer("kind"), std::string("\"") + kKind + "\"", f.at("kind"));
  f.only({"kind", "name", "description", "written_utc", "generated_by", "axes", "repeats", "program", "points"});
  CampaignIndex c;
  c.name = f.string("name");
  c.description = f.string("description");
  c.written_utc = f.string("written_utc");
  c.generated_by = f.string("generated_by");
  for (const JsonFields& a : f.items("axes")) {
    a.only({"pointer", "keys"});
    c.axes.push_back({a.string("pointer"), a.strings("keys")});
  }
  c.repeats = f.integer("repeats", 1, kMaxCount);
  c.program = f.strings("program");
  for (const JsonFields& p : f.items("points")) c.points.push_back(point_from(p));
  // Each run once: an index that lists a record twice would count one run as two repeats ("2/2 done").
  std::map<std::string, std::string> names, records;
  for (size_t i = 0; i < c.points.size(); ++i)
    for (size_t k = 0; k < c.points[i].runs.size(); ++k) {
      const CampaignIndex::Run& r = c.points[i].runs[k];
      const std::string at = "/points/" + std::to_string(i) + "/runs/" + std::to_string(k);
      // Record paths as the file system resolves them ("runs/./x.json" is "runs/x.json").
      const std::string record = std::filesystem::path(r.record).lexically_normal().string();
      for (auto [seen, field, value] : {std::tuple{&names, "name", r.name}, std::tuple{&records, "record", record}}) {
        const auto [it, fresh] = seen->emplace(value, at);
        if (!fresh)
          throw BadInput(at + "/" + field + ": \"" + value + "\" is listed twice (also at " + it->second + "/" + field + ")");
      }
    }
  // One run per repeat at every point, as the sweep writes them: a point listing none vanished from the table though
  // its records were there, and one listing fewer showed "1/1 done" where 3 repeats ran (exit 0; found by a hunt).
  for (size_t i = 0; i < c.points.size(); ++i)
    if (c.points[i].runs.size() != static_cast<size_t>(c.repeats))
      throw BadInput("/points/" + std::to_string(i) + "/runs: " + std::to_string(c.points[i].runs.size()) +
                     " run(s), where /repeats says " + std::to_string(c.repeats) + " (one run per repeat)");
  return c;
}

CampaignIndex read_campaign_index(const std::filesystem::path& file) {
  const Json j = read_json_file(file.string(), "campaign index");
  try {
    return CampaignIndex::from_json(j);
  } catch (const BadInput& e) {
    throw BadInput(file.string() + ": " + e.what());
  }
}

}  // namespace dtbench
