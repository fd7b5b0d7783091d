#include "slurm/expand.hpp"

#include <cmath>
#include <map>

#include "config/rules.hpp"
#include "config/run_config.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "slurm/shell.hpp"

namespace dtbench::slurm {
namespace {

std::string pointer_of(const std::string& key) {
  std::string p = "/";
  for (char c : key) p += c == '.' ? '/' : c;
  return p;
}

std::string last_word(const std::string& key) {
  auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

// A short, file-safe piece of a point label: strings as they are ("ring"), other values after the
// key's last word ("nodes2", "lr0.1"), objects by their "name" when they have one.
std::string label_part(const std::string& key, const Json& v, size_t value_index) {
  std::string text;
  if (v.is_string()) text = v.get<std::string>();
  else if (v.is_object() && v.contains("name") && v["name"].is_string()) text = v["name"].get<std::string>();
  else if (v.is_boolean()) text = (v.get<bool>() ? "" : "no-") + last_word(key);
  else if (v.is_number()) text = last_word(key) + v.dump();
  else text = last_word(key) + "v" + std::to_string(value_index);
  return safe_name(text, 24);
}

// Where in the spec a config error at `config_pointer` comes from: the axis that set that key (or a key above it)
// for this point; the axis's key when the error is at a key above the one it sets that the base config does not
// have (the axis made it: "foo.bar" gives /foo, an unknown key, which is no place in /base); else the base config.
std::string spec_pointer(const std::string& config_pointer, const std::vector<std::pair<std::string, std::string>>& set_by,
                         const Json& base) {
  for (const auto& [key, at] : set_by) {
    std::string kp = pointer_of(key);
    if (config_pointer == kp || config_pointer.rfind(kp + "/", 0) == 0) return at + config_pointer.substr(kp.size());
  }
  bool in_base = config_pointer == "/";
  try {
    in_base = in_base || base.contains(Json::json_pointer(config_pointer));
  } catch (const Json::exception&) {  // not a pointer nlohmann reads: the base's, as before
    in_base = true;
  }
  // A section the point's axis values lie in: the axis decides (a base section with another key of it was named
  // alone, though the point's own value was the one refused: found by a hunt), the base's part beside it.
  for (const auto& [key, at] : set_by)
    if ((pointer_of(key) + "/").rfind(config_pointer + "/", 0) == 0)
      return in_base ? at + " (with /base" + config_pointer + ")" : at.substr(0, at.rfind('/'));
  return "/base" + (config_pointer == "/" ? std::string() : config_pointer);
}

// The point count, after checking that points x repeats is at most kMaxRuns. The product is checked as it
// grows, so it never overflows (at most kMaxRuns times one axis, which a JSON file of bounded size holds).
size_t count_points(const Spec& spec) {
  std::string grid;
  for (const auto& a : spec.axes) grid += (grid.empty() ? "" : " x ") + std::to_string(a.size());
  size_t points = 1;
  for (const auto& a : spec.axes) {
    points *= a.size();
    if (points * static_cast<size_t>(spec.repeats) > kMaxRuns)
      throw BadInput(std::string(spec.axes[0].pointer == "/axes" ? "/axes" : "/zip") + ": " + grid + " points x " +
                     std::to_string(spec.repeats) + " repeats is more than " + std::to_string(kMaxRuns) +
                     " runs (Slurm's default MaxJobCount)");
  }
  return points;
}

}  // namespace

std::string spec_pointer(const Point& p, const std::string& config_pointer, const Json& base) {
  return spec_pointer(config_pointer, p.set_by, base);
}

void set_path(Json& doc, const std::string& key, const Json& value, const std::string& base_pointer) {
  Json* node = &doc;
  std::string ptr = base_pointer;
  size_t start = 0;
  for (;;) {
    size_t dot = key.find('.', start);
    std::string word = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (dot == std::string::npos) {
      (*node)[word] = value;
      return;
    }
    ptr += '/';
    ptr += config::pointer_token(word);
    Json& next = (*node)[word];
    if (next.is_null()) next = Json::object();
    if (!next.is_object()) throw BadInput(ptr + ": expected an object (an axis sets \"" + key + "\"), got " + next.dump());
    node = &next;
    start = dot + 1;
  }
}

std::string describe(const Point& p) {
  std::string s;
  for (const auto& [k, v] : p.values) s += (s.empty() ? "" : ", ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return s.empty() ? "the base config" : s;
}

std::vector<Point> expand(const Spec& spec, const std::filesystem::path& runs_dir, bool on_slurm_nodes) {
  const size_t count = count_points(spec);
  size_t width = std::to_string(count == 0 ? 0 : count - 1).size();
  // The repeats' seeds count up from the base seed. One that is not an integer in [0, 2^53] goes to every run
  // as given, so that resolving the run config refuses it by name (/base/seed).
  const Json given_seed = spec.base.contains("seed") ? spec.base["seed"] : Json(1);
  const double seed_value = given_seed.is_number() ? given_seed.get<double>() : -1;
  const bool seed_counts = std::floor(seed_value) == seed_value && seed_value >= 0 && seed_value <= 9007199254740992.0;
  const int64_t base_seed = seed_counts ? static_cast<int64_t>(seed_value) : 0;
  // The last repeat's seed must be a seed too (2^53 - 1 with 2 repeats named /base/seed, where the seed given is one).
  using config::kMaxSeed;
  if (seed_counts && base_seed <= kMaxSeed && spec.repeats > 1 && base_seed > kMaxSeed - (spec.repeats - 1))
    throw BadInput("/repeats: " + std::to_string(spec.repeats) + " repeats count the seeds up from /base/seed " +
                   std::to_string(base_seed) + " to " + std::to_string(base_seed) + " + " +
                   std::to_string(spec.repeats - 1) + ", above the largest seed, 2^53 - 1 = " +
                   std::to_string(kMaxSeed) + ": use a smaller /base/seed");

  std::vector<Point> points;
  // Each point once, as resolved: two axis values that differ as written but resolve alike ({"name": "sgd"} and
  // the same with its default lr spelt out, a batch with and without micro_batches 1, "10" and "00:10:00" of
  // Slurm time) ran the same config twice under two names, with the same seeds. Keyed by the first run's config
  // without its name and output, and the Slurm section with its time in seconds.
  std::map<std::string, size_t> resolved_as;
  std::vector<size_t> pick(spec.axes.size(), 0);  // mixed-radix counter, last axis fastest
  for (size_t i = 0; i < count; ++i) {
    size_t rest = i;
    for (size_t a = spec.axes.size(); a-- > 0;) {
      pick[a] = rest % spec.axes[a].size();
      rest /= spec.axes[a].size();
    }
    Point p;
    p.index = i;
    std::string num = std::to_string(i);
    p.id = "p" + std::string(width - num.size(), '0') + num;
    p.label = p.id;
    Json user = spec.base;
    p.slurm = spec.slurm;
    std::vector<std::pair<std::string, std::string>>& set_by = p.set_by;  // key -> spec pointer of its value
    std::map<std::string, std::string> slurm_set_by;           // slurm key an axis sets -> that value's pointer
    for (size_t a = 0; a < spec.axes.size(); ++a) {
      const Axis& axis = spec.axes[a];
      for (size_t k = 0; k < axis.keys.size(); ++k) {
        const std::string& key = axis.keys[k];
        const Json& v = axis.values[k][pick[a]];
        std::string at = axis.pointer + "/" + key + "/" + std::to_string(pick[a]);
        p.values.emplace_back(key, v);
        p.label.append("-").append(label_part(key, v, pick[a]));
        if (key.rfind("slurm.", 0) == 0) {
          p.slurm[key.substr(6)] = v;
          slurm_set_by[key.substr(6)] = at;
        }
        else {
          set_path(user, key, v, "/base");
          set_by.emplace_back(key, at);
        }
      }
    }
    if (p.label.size() > 150) {  // file names stay short; the id keeps them unique
      p.label.resize(150);
      while (p.label.back() == '-' || p.label.back() == '_') p.label.pop_back();
    }
    try {
      check_slurm_section(p.slurm, "/slurm");
      // The arguments of the launcher this sweep runs under: Slurm's scripts' or --local's mpirun.
      const int64_t ranks = p.slurm["nodes"].get<int64_t>() * p.slurm["tasks_per_node"].get<int64_t>();
      const int64_t per_node = p.slurm["tasks_per_node"].get<int64_t>();
      if (on_slurm_nodes) {
        const std::string at =
            slurm_set_by.count("launcher_args") ? slurm_set_by["launcher_args"] : "/slurm/launcher_args";
        const std::string launcher = p.slurm["launcher"].get<std::string>();
        check_launcher_args(p.slurm["launcher_args"], launcher, ranks, per_node, false, at);
        check_launcher_cpus(p.slurm, at);
      } else {
        check_launcher_args(spec.local["mpirun_args"], "mpirun", ranks, per_node, true, "/local/mpirun_args");
      }
    } catch (const BadInput& e) {
      throw BadInput(std::string(e.what()) + " (point " + p.id + ": " + describe(p) + ")");
    }
    p.ranks = p.slurm["nodes"].get<int64_t>() * p.slurm["tasks_per_node"].get<int64_t>();
    for (int64_t r = 0; r < spec.repeats; ++r) {
      Run run;
      run.seed = base_seed + r;
      run.name = p.label + "-s" + std::to_string(run.seed);
      Json u = user;
      u["seed"] = seed_counts ? Json(run.seed) : given_seed;
      u["name"] = run.name;
      u["output"]["dir"] = runs_dir.string();
      u["output"]["record"] = run.name + ".json";
      try {
        run.config = config::resolve(u, static_cast<int>(p.ranks));
        // --local runs every rank on this machine: one node (emulated nodes, /reducer/ranks_per_node, apply anyway).
        config::check_node_rules(run.config, static_cast<int>(p.ranks),
                                 on_slurm_nodes ? static_cast<int>(p.slurm["nodes"].get<int64_t>()) : 1);
      } catch (const BadInput& e) {
        // The config's message is "POINTER: reason"; the pointer is mapped to where the spec set that key.
        std::string what = e.what();
        const std::string where = " (point " + p.id + ": " + describe(p) + ", " + std::to_string(p.ranks) + " ranks)";
        const auto colon = what.find(": ");
        if (colon == std::string::npos) throw BadInput(what + where);
        std::string ptr = what.substr(0, colon);
        if (ptr == "/seed") ptr = "/base/seed";  // the seed of a repeat is the base seed plus its index
        else ptr = spec_pointer(ptr, set_by, spec.base);
        throw BadInput(ptr + what.substr(colon) + where);
      }
      p.runs.push_back(std::move(run));
    }
    if (!p.runs.empty()) {
      Json key = p.runs.front().config, slurm = p.slurm;
      key.erase("name");
      key.erase("output");
      slurm["time"] = slurm_time_seconds(slurm["time"].get<std::string>());
      const auto [at, fresh] = resolved_as.emplace(key.dump() + "\n" + slurm.dump(), points.size());
      if (!fresh) {
        const Point& first = points[at->second];
        throw BadInput(std::string(spec.axes.empty() ? "/axes" : spec.axes[0].pointer == "/axes" ? "/axes" : "/zip") +
                       ": points " + first.id + " (" + describe(first) + ") and " + p.id + " (" + describe(p) +
                       ") resolve to the same run config and Slurm section: each point is run once (drop one of the "
                       "values; /repeats is for repeated runs)");
      }
    }
    points.push_back(std::move(p));
  }
  return points;
}

}  // namespace dtbench::slurm
