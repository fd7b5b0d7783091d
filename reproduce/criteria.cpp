#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>
#include <vector>

#include "analysis/campaign_data.hpp"
#include "core/error.hpp"
#include "reproduce/criteria/kinds.hpp"
#include "reproduce/evidence.hpp"
#include "slurm/expand.hpp"
#include "slurm/spec.hpp"

namespace dtbench::reproduce {

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::supported: return "supported";
    case Verdict::contradicted: return "contradicted";
    case Verdict::inconclusive: return "inconclusive";
  }
  return "?";
}

const CriterionKind& criterion_kind(const std::string& name, const std::string& where) {
  static const std::vector<const CriterionKind*> kinds = {&kEquivalence, &kBatchScaling, &kUsableBatch,
                                                          &kCriticalBatch, &kAsyncCost, &kCommHiding, &kTraffic,
                                                          &kPublishedTable, &kTimeToTrain};
  std::string list;
  for (const auto* k : kinds) {
    if (name == k->name) return *k;
    list += (list.empty() ? "" : ", ") + std::string(k->name);
  }
  throw BadInput(where + ": unknown criterion kind \"" + name + "\" (kinds: " + list + ")");
}

void check_keys(const Json& criterion, const std::string& where, std::initializer_list<const char*> keys) {
  for (auto it = criterion.begin(); it != criterion.end(); ++it) {
    if (it.key() == "kind" || it.key() == "text") continue;
    bool known = false;
    for (const char* k : keys) known = known || it.key() == k;
    if (!known) throw BadInput(where + "/" + it.key() + ": unexpected key for criterion \"" +
                               criterion["kind"].get<std::string>() + "\"");
  }
  for (const char* k : keys)
    if (!criterion.contains(k)) throw BadInput(where + "/" + k + ": missing");
}

namespace {
std::string shortest(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

double number_in(const Json& criterion, const std::string& where, const char* key, double lo, double hi) {
  const Json& v = criterion.at(key);
  if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi)
    throw BadInput(where + "/" + key + ": expected a number in [" + shortest(lo) + ", " + shortest(hi) + "], got " +
                   v.dump());
  return v.get<double>();
}

int64_t integer_in(const Json& criterion, const std::string& where, const char* key, int64_t lo, int64_t hi) {
  const Json& v = criterion.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    throw BadInput(where + "/" + key + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                   "], got " + v.dump());
  return v.get<int64_t>();
}

std::string text_in(const Json& criterion, const std::string& where, const char* key) {
  const Json& v = criterion.at(key);
  if (!v.is_string() || v.get<std::string>().empty())
    throw BadInput(where + "/" + key + ": expected a non-empty text, got " + v.dump());
  return v.get<std::string>();
}

void check_group_values(const Json& criterion, const std::vector<Experiment>& experiments, const std::string& where,
                        std::initializer_list<const char*> values) {
  const std::string key = criterion.at("group_key").get<std::string>();
  // A group of a key the records give (global_batch) is known only once the runs are: nothing to check before.
  std::stringstream parts(key);
  for (std::string part; std::getline(parts, part, ',');)
    if (analysis::key_from_record(part)) return;
  std::set<std::string> groups;
  for (const Experiment& e : experiments) {
    if (e.kind != "sweep") continue;
    for (const slurm::Point& p : slurm::expand(slurm::load_spec(e.spec), e.spec.parent_path() / "runs"))
      for (const slurm::Run& r : p.runs) {
        analysis::RunData run;
        run.config = r.config;
        run.slurm = p.slurm;
        run.ranks = p.ranks;
        groups.insert(group_text(run, key));
      }
  }
  for (const char* v : values) {
    const std::string want = criterion.at(v).get<std::string>();
    if (groups.count(want) == 0) {
      std::string have;
      for (const auto& g : groups) have += (have.empty() ? "\"" : ", \"") + g + "\"";
      throw BadInput(where + "/" + v + ": no run of this claim's sweeps is in group \"" + want + "\" of /group_key \"" +
                     key + "\" (their groups: " + (have.empty() ? std::string("none") : have) + ")");
    }
  }
}

const Experiment& named_experiment(const Json& criterion, const std::vector<Experiment>& experiments,
                                   const std::string& where, const char* key, const std::string& kind) {
  const std::string name = criterion.at(key).get<std::string>();
  std::string names;
  for (const Experiment& e : experiments) {
    if (e.name == name && e.kind == kind) return e;
    if (e.kind == kind) names += (names.empty() ? "" : ", ") + e.name;
  }
  throw BadInput(where + "/" + key + ": \"" + name + "\" is no " + kind + " experiment of this claim (" +
                 (names.empty() ? std::string("it has none") : "there are: " + names) + ")");
}

const Experiment& published_inputs(const Json& criterion, const std::vector<Experiment>& experiments,
                                   const std::string& where, std::initializer_list<const char*> files) {
  const Experiment& e = named_experiment(criterion, experiments, where, "inputs", "published");
  for (const char* file : files)
    if (std::find(e.files.begin(), e.files.end(), file) == e.files.end())
      throw BadInput(where + "/inputs: experiment \"" + e.name + "\" does not copy " + file);
  return e;
}

std::vector<std::string> texts_in(const Json& criterion, const std::string& where, const char* key) {
  const Json& v = criterion.at(key);
  std::vector<std::string> out;
  if (v.is_array())
    for (const auto& x : v)
      if (x.is_string() && !x.get<std::string>().empty()) out.push_back(x.get<std::string>());
  if (!v.is_array() || v.empty() || out.size() != v.size())
    throw BadInput(where + "/" + key + ": expected a non-empty list of non-empty texts, got " + v.dump());
  return out;
}

}  // namespace dtbench::reproduce
