#include "pbt/spec.hpp"

#include <algorithm>
#include <cmath>

#include "config/run_config.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "slurm/expand.hpp"
#include "slurm/shell.hpp"
#include "slurm/spec.hpp"

namespace dtbench::pbt {
namespace fs = std::filesystem;
using config::fail;
using config::shown;

namespace {

// The keys of the spec that the schema machinery checks; base, hyperparameters, explore/perturb and program
// are checked by hand below.
config::Node fixed_schema() {
  using namespace config;
  return object({
      {"name", text("", {}, "campaign name")},
      {"mode", text("pbt", {"pbt", "random_search"})},
      {"select_on", text("", {"", "validation", "test"}, "the accuracy that ranks members; \"\" = validation "
                                                         "when the base holds a validation set out, else test")},
      {"population", integer(0, 0, 100000, "members")},
      {"ready_steps", integer(0, 0, 1e12, "steps between ready points")},
      {"seed", integer(1, 0, static_cast<double>(config::kMaxSeed))},
      {"exploit", object({{"truncation", number(0.25, 0, 0.5, true, false)}})},
      {"explore", object({{"resample_probability", number(0, 0, 1)}})},
  });
}

// The base with `key` set to `value`, resolved as a run config of `ranks` ranks (BadInput as config::resolve
// throws).
Json resolve_with(const Json& base, const std::string& key, const Json& value, int64_t ranks) {
  Json user = base;
  slurm::set_path(user, key, value, "/base");
  return config::resolve(user, static_cast<int>(ranks));
}

// /local: concurrency (pbt's own) and mpirun_args (as a sweep's).
void parse_local(const Json* local, Spec& s) {
  Json rest = Json::object();
  if (local) {
    if (!local->is_object()) fail("/local", "expected an object, got " + shown(*local));
    for (auto it = local->begin(); it != local->end(); ++it) {
      if (it.key() == "concurrency") {
        const Json& c = it.value();
        if (!c.is_number_integer() || c.get<int64_t>() < 1 || c.get<int64_t>() > 1024)
          fail("/local/concurrency", "expected an integer from 1 to 1024, got " + shown(c));
        s.concurrency = static_cast<int>(c.get<int64_t>());
      } else if (it.key() == "mpirun_args") {
        rest["mpirun_args"] = it.value();
      } else {
        config::throw_unknown_key("/local", config::pointer_token(it.key()), {"concurrency", "mpirun_args"});
      }
    }
  }
  s.local = slurm::resolve_local(&rest, "/local");
}

Prior parse_prior(const std::string& key, const Json& j, const Json& base, const Json& resolved, int64_t ranks) {
  const std::string ptr = "/hyperparameters/" + config::pointer_token(key);
  const std::string first = key.substr(0, key.find('.'));
  if ((first != "optimizer" && first != "schedule" && first != "lr_scaling") || key == "optimizer.name" ||
      key.find('.') == std::string::npos)
    fail(ptr, "only the optimizer's hyperparameters, the schedule's and lr_scaling's keys can change while a member "
              "continues another's checkpoint (not batch sizes, models or data)");
  if (!j.is_object()) fail(ptr, "expected an object {\"prior\": ..., \"min\": ..., \"max\": ...}, got " + shown(j));
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "prior" && it.key() != "min" && it.key() != "max")
      config::throw_unknown_key(ptr, config::pointer_token(it.key()), {"prior", "min", "max"});
  Prior p;
  p.key = key;
  if (!j.contains("prior") || !j["prior"].is_string() ||
      (j["prior"] != "uniform" && j["prior"] != "log_uniform"))
    fail(ptr + "/prior", "expected one of \"uniform\", \"log_uniform\", got " + (j.contains("prior") ? shown(j["prior"]) : std::string("nothing")));
  p.kind = j["prior"].get<std::string>();
  for (const char* bound : {"min", "max"}) {
    if (!j.contains(bound) || !j[bound].is_number()) fail(ptr + "/" + bound, "expected a number, got " + (j.contains(bound) ? shown(j[bound]) : std::string("nothing")));
    // Each bound must be a value the run config takes for this key.
    try {
      resolve_with(base, key, j[bound], ranks);
    } catch (const BadInput& e) {
      fail(ptr + "/" + bound, std::string("not a value of ") + key + " in the base config: " + e.what());
    }
  }
  p.min = j["min"].get<double>();
  p.max = j["max"].get<double>();
  if (!(p.min < p.max)) fail(ptr + "/max", "must be greater than min (" + config::fmt_number(p.min) + "), got " + config::fmt_number(p.max));
  if (p.kind == "log_uniform" && !(p.min > 0)) fail(ptr + "/min", "a log-uniform prior needs min > 0, got " + config::fmt_number(p.min));
  const Json::json_pointer where(config::dotted_pointer(key));
  if (!resolved.contains(where)) fail(ptr, "the base config has no key " + key);
  // The schema says whether the key is an integer: a number written as 0 in the base is still a number.
  p.integer = config::leaf_kind(config::run_schema(), resolved, where.to_string()) == config::Node::Kind::integer;
  return p;
}

// Each bound was checked with the base's other values; together the priors may still give a config the run refuses
// (a cosine schedule's eta_min above a learning rate of its range, warmup in both steps and epochs). A member can
// hold any point of the box the priors span (draws and explored values are clamped into it), and the rules between
// keys are bounds between them, so every corner of the box is checked: up to kMaxPriors priors, 65,536 configs (not
// timed: 4,096 took 0.31 s within a whole dry run, so some 5 s; beyond 12 priors only the two corners of all minima and all maxima were checked, which let a
// hunt's 13 priors through with an eta_min above a learning rate the box allowed).
constexpr size_t kMaxPriors = 16;
void check_prior_corners(const Spec& s) {
  const size_t n = s.hyperparameters.size();
  if (n > kMaxPriors)
    fail("/hyperparameters", std::to_string(n) + " priors: at most " + std::to_string(kMaxPriors) + ", so that every "
         "corner of the box they span (2^n configs) can be checked against the run's rules before anything is written");
  const uint64_t corners = uint64_t{1} << n;
  for (uint64_t c = 0; c < corners; ++c) {
    const uint64_t high = c;
    Json user = s.base, at = Json::object();
    for (size_t i = 0; i < n; ++i) {
      const Prior& p = s.hyperparameters[i];
      const double v = (high >> i) & 1 ? p.max : p.min;
      const Json value = p.integer ? Json(static_cast<int64_t>(std::llround(v))) : Json(v);
      slurm::set_path(user, p.key, value, "/base");
      at[p.key] = value;
    }
    try {
      config::resolve(user, static_cast<int>(s.ranks));
    } catch (const BadInput& e) {
      fail("/hyperparameters", "the priors together allow a member the run refuses: at " + at.dump() + ", " + e.what());
    }
  }
}

}  // namespace

int Spec::cut() const {
  const int n = static_cast<int>(std::lround(truncation * population));
  return std::clamp(n, 1, population / 2);
}

Spec parse_spec(const Json& doc, const fs::path& spec_dir) {
  if (!doc.is_object()) fail("", "a spec must be a JSON object, got " + shown(doc));
  // Every top-level key, those checked by hand below included, so that a misspelt one is told all of them.
  std::vector<std::string> top;
  for (const auto& [key, node] : fixed_schema().fields) top.push_back(key);
  for (const char* key : {"base", "hyperparameters", "program", "local", "slurm"}) top.push_back(key);
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (std::find(top.begin(), top.end(), it.key()) == top.end())
      config::throw_unknown_key("", config::pointer_token(it.key()), top);
  Json fixed = doc;
  for (const char* key : {"base", "hyperparameters", "program", "local", "slurm"}) fixed.erase(key);
  if (fixed.contains("explore") && fixed["explore"].is_object()) fixed["explore"].erase("perturb");
  const Json r = config::resolve_node(fixed_schema(), &fixed, "");

  Spec s;
  s.source = doc;
  s.name = r["name"].get<std::string>();
  if (s.name.empty()) fail("/name", "missing: give the campaign a name");
  if (s.name.find_first_of("/\\\t") != std::string::npos || slurm::has_control_chars(s.name))
    fail("/name", "must not hold a path separator or control character, got " + shown(doc["name"]));
  if (s.name.size() > slurm::kMaxCampaignNameBytes)
    fail("/name", "at most " + std::to_string(slurm::kMaxCampaignNameBytes) + " bytes (Slurm's job names carry it), got " +
                      std::to_string(s.name.size()));
  s.mode = r["mode"].get<std::string>();
  s.population = static_cast<int>(r["population"].get<int64_t>());
  if (s.population < 2)
    fail("/population", "a population of " + std::to_string(s.population) +
                            " has no member to copy from; give at least 2 members");
  s.seed = r["seed"].get<uint64_t>();
  s.truncation = r["exploit"]["truncation"].get<double>();
  s.resample_probability = r["explore"]["resample_probability"].get<double>();
  parse_local(doc.contains("local") ? &doc["local"] : nullptr, s);
  s.slurm = slurm::resolve_slurm(doc.contains("slurm") ? &doc["slurm"] : nullptr, "/slurm");
  if (s.slurm["array"].get<bool>())
    fail("/slurm/array", "members are submitted one job each at every ready point; job arrays are for sweeps");
  s.ranks = s.slurm["nodes"].get<int64_t>() * s.slurm["tasks_per_node"].get<int64_t>();
  if (s.ranks > 65536)
    fail("/slurm/tasks_per_node", "a member of " + std::to_string(s.ranks) +
                                      " ranks (nodes x tasks_per_node) is more than 65536");
  // Members run under Slurm (--submit) or mpirun here: neither launcher's arguments may ask another rank count.
  const int64_t per_node = s.slurm["tasks_per_node"].get<int64_t>();
  slurm::check_launcher_args(s.slurm["launcher_args"], s.slurm["launcher"].get<std::string>(), s.ranks, per_node,
                             false, "/slurm/launcher_args");
  slurm::check_launcher_cpus(s.slurm, "/slurm/launcher_args");
  slurm::check_launcher_args(s.local["mpirun_args"], "mpirun", s.ranks, per_node, true, "/local/mpirun_args");

  if (doc.contains("explore") && doc["explore"].is_object() && doc["explore"].contains("perturb")) {
    const Json& p = doc["explore"]["perturb"];
    if (!p.is_array() || p.empty()) fail("/explore/perturb", "expected a non-empty array of factors, got " + shown(p));
    s.perturb.clear();
    for (size_t i = 0; i < p.size(); ++i) {
      if (!p[i].is_number() || !(p[i].get<double>() > 0) || !std::isfinite(p[i].get<double>()))
        fail("/explore/perturb/" + std::to_string(i), "expected a factor > 0, got " + shown(p[i]));
      s.perturb.push_back(p[i].get<double>());
    }
  }

  if (!doc.contains("base")) fail("/base", "missing: give the members' run config (an object or its file)");
  s.base = slurm::load_base(doc["base"], spec_dir);
  if (doc["base"].is_string()) {
    s.base_file = doc["base"].get<std::string>();
    if (s.base_file.is_relative()) s.base_file = spec_dir / s.base_file;
  }
  s.source["base"] = s.base;
  const char* kSet = "set by dtbench pbt (each member's interval is a run named after it, under --out/runs); remove it";
  if (s.base.contains("name")) fail("/base/name", kSet);
  if (s.base.contains("output") && s.base["output"].is_object())
    for (const char* key : {"dir", "record", "keep_checkpoint"})
      if (s.base["output"].contains(key)) fail(std::string("/base/output/") + key, kSet);
  Json resolved;
  try {
    resolved = config::resolve(s.base, static_cast<int>(s.ranks));
  } catch (const BadInput& e) {
    fail("/base", e.what());
  }
  s.total_steps = resolved["duration"]["steps"].get<int64_t>();
  s.base_seed = resolved["seed"].get<int64_t>();
  // Member m trains with seed base + m (population.cpp): the last one must be a seed too (found by a hunt: 2^53 - 1
  // passed, and member 1 failed every interval with exit 0; the sweep refuses its repeats' likewise).
  using config::kMaxSeed;
  if (s.base_seed > kMaxSeed - (s.population - 1))
    fail("/base/seed", std::to_string(s.base_seed) + " plus the last member's index, " +
                           std::to_string(s.population - 1) + ", is above the largest seed, 2^53 - 1 = " +
                           std::to_string(kMaxSeed) + ": use a smaller /base/seed");
  if (s.total_steps <= 0)
    fail("/base/duration/steps", "give each member's length in steps (ready points count steps), not epochs");
  if (resolved["parallel"]["mode"] == "async")
    fail("/base/parallel/mode", "asynchronous SGD keeps no checkpoint for a member to continue from");
  if (resolved["eval"]["stop_at_target"].get<bool>())
    fail("/base/eval/stop_at_target", "members train to the end of each interval; a member that stopped early could "
                                      "not be compared at the ready point");
  const bool held_out = resolved["data"]["validation_size"].get<int64_t>() > 0;
  s.select_on = r["select_on"].get<std::string>();
  if (s.select_on.empty()) s.select_on = held_out ? "validation" : "test";
  if (s.select_on == "validation" && !held_out)
    fail("/select_on", "selecting on the validation set needs one: give /base/data/validation_size (images held "
                       "out of the training set)");
  s.ready_steps = r["ready_steps"].get<int64_t>();
  if (s.ready_steps < 1) fail("/ready_steps", "give the ready interval in steps (>= 1)");
  if (s.ready_steps > s.total_steps)
    fail("/ready_steps", std::to_string(s.ready_steps) + " is longer than the run, " + std::to_string(s.total_steps) +
                             " steps (/base/duration/steps): no member would ever be ready");

  if (!doc.contains("hyperparameters") || !doc["hyperparameters"].is_object() || doc["hyperparameters"].empty())
    fail("/hyperparameters", "expected an object of key: prior with at least one key, got " +
                                 (doc.contains("hyperparameters") ? shown(doc["hyperparameters"]) : std::string("nothing")));
  for (auto it = doc["hyperparameters"].begin(); it != doc["hyperparameters"].end(); ++it)
    s.hyperparameters.push_back(parse_prior(it.key(), it.value(), s.base, resolved, s.ranks));
  check_prior_corners(s);

  if (doc.contains("program")) {
    const Json& p = doc["program"];
    if (!p.is_array() || p.empty()) fail("/program", "expected a non-empty array of strings, got " + shown(p));
    for (size_t i = 0; i < p.size(); ++i) {
      if (!p[i].is_string() || p[i].get<std::string>().empty())
        fail("/program/" + std::to_string(i), "expected a non-empty string, got " + shown(p[i]));
      s.program.push_back(p[i].get<std::string>());
    }
  }
  return s;
}

Spec load_spec(const fs::path& path) {
  const Json doc = read_json_file(path.string(), "the PBT spec");
  try {
    return parse_spec(doc, path.parent_path());
  } catch (const BadInput& e) {
    throw BadInput(path.string() + ": " + e.what());
  }
}

Json member_config(const Spec& spec, const Json& hyperparameters, int member, const std::string& run,
                   const fs::path& runs_dir) {
  Json cfg = spec.base;
  for (auto it = hyperparameters.begin(); it != hyperparameters.end(); ++it) slurm::set_path(cfg, it.key(), it.value(), "/base");
  cfg["seed"] = spec.base_seed + member;
  // Synthetic data drawn from each member's own seed would be another data set per member, and a member that
  // continues another's checkpoint would train and be ranked on other images (a hunt): one set, the base seed's.
  if (cfg.contains("data") && cfg["data"].is_object() && cfg["data"].value("dataset", "") == "synthetic") {
    Json& syn = cfg["data"]["synthetic"];
    if (!syn.is_object()) syn = Json::object();
    if (!syn.contains("seed")) syn["seed"] = spec.base_seed;
  }
  cfg["duration"] = {{"steps", spec.total_steps}};
  cfg["name"] = run;
  if (!cfg.contains("output")) cfg["output"] = Json::object();
  cfg["output"]["dir"] = runs_dir.string();
  cfg["output"]["keep_checkpoint"] = true;
  return cfg;
}

}  // namespace dtbench::pbt
