#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/error.hpp"
#include "reproduce/criteria/kinds.hpp"

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

const Experiment& published_inputs(const Json& criterion, const std::vector<Experiment>& experiments,
                                   const std::string& where, std::initializer_list<const char*> files) {
  const std::string name = criterion.at("inputs").get<std::string>();
  std::string names;
  for (const Experiment& e : experiments) {
    if (e.name == name && e.kind == "published") {
      for (const char* file : files)
        if (std::find(e.files.begin(), e.files.end(), file) == e.files.end())
          throw BadInput(where + "/inputs: experiment \"" + name + "\" does not copy " + file);
      return e;
    }
    if (e.kind == "published") names += (names.empty() ? "" : ", ") + e.name;
  }
  throw BadInput(where + "/inputs: \"" + name + "\" is no published experiment of this claim (" +
                 (names.empty() ? std::string("it has none") : "there are: " + names) + ")");
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
