#include "core/pbt_lineage.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace dtbench::pbt {

namespace {

const Json& field(const Json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw BadInput(where + "/" + key + ": missing");
  return j.at(key);
}

template <class T>
T get(const Json& j, const char* key, const std::string& where) {
  const Json& v = field(j, key, where);
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // An integer of the type's range: nlohmann's get would truncate 2^40 to an int, or 1.5 to 1.
    const bool fits = v.is_number_unsigned()  ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                      : v.is_number_integer() ? v.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                                                    (std::is_unsigned_v<T> ||
                                                     v.get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<T>::max()))
                                              : false;
    if (!fits) throw BadInput(where + "/" + key + ": expected an integer, got " + v.dump());
    return v.get<T>();
  } else {
    try {
      return v.get<T>();
    } catch (const Json::exception&) {
      throw BadInput(where + "/" + key + ": wrong type, got " + v.dump());
    }
  }
}

// A member's hyperparameters: numbers (every prior is numeric), one for each key of the spec's "hyperparameters" and
// within its prior's range (an integer key's value is the rounded draw, so half a unit beyond it).
void check_hyperparameters(const Json& h, const Json& spec, const std::string& where) {
  if (!h.is_object() || h.empty()) throw BadInput(where + ": expected an object of hyperparameters");
  const Json* priors = spec.is_object() && spec.contains("hyperparameters") && spec["hyperparameters"].is_object()
                           ? &spec["hyperparameters"]
                           : nullptr;
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (!it.value().is_number() || !std::isfinite(it.value().get<double>()))
      throw BadInput(where + "/" + it.key() + ": expected a number, got " + it.value().dump());
    if (!priors) continue;
    if (!priors->contains(it.key())) throw BadInput(where + "/" + it.key() + ": not a hyperparameter of the spec");
    const Json& prior = (*priors)[it.key()];
    if (!prior.is_object() || !prior.contains("min") || !prior.contains("max") || !prior["min"].is_number() ||
        !prior["max"].is_number())
      continue;  // the spec's own check names it
    const double v = it.value().get<double>(), slack = it.value().is_number_integer() ? 0.5 : 0.0;
    if (v < prior["min"].get<double>() - slack || v > prior["max"].get<double>() + slack)
      throw BadInput(where + "/" + it.key() + ": " + it.value().dump() + " is outside the spec's prior, [" +
                     prior["min"].dump() + ", " + prior["max"].dump() + "]");
  }
  if (priors)
    for (auto it = priors->begin(); it != priors->end(); ++it)
      if (!h.contains(it.key())) throw BadInput(where + "/" + it.key() + ": missing (a hyperparameter of the spec)");
}

}  // namespace

std::string run_name(int member, int64_t interval) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "m%02d-i%03lld", member, static_cast<long long>(interval));
  return buf;
}

Json Lineage::to_json() const {
  Json out = {{"format", "dtbench-pbt-lineage"}, {"version", 1}, {"name", name}, {"mode", mode},
              {"population", population}, {"ready_steps", ready_steps}, {"total_steps", total_steps},
              {"seed", seed}, {"select_on", select_on}, {"spec", spec}, {"intervals", Json::array()}};
  for (const Interval& iv : intervals) {
    Json ji = {{"interval", iv.index}, {"start_step", iv.start_step}, {"end_step", iv.end_step},
               {"members", Json::array()}, {"events", Json::array()}};
    for (const MemberInterval& m : iv.members) {
      ji["members"].push_back({{"member", m.member}, {"run", m.run},
                               {"init_from", m.init_from.empty() ? Json(nullptr) : Json(m.init_from)},
                               {"hyperparameters", m.hyperparameters}, {"status", m.status}, {"exit_code", m.exit_code},
                               {"test_accuracy", m.test_accuracy ? Json(*m.test_accuracy) : Json(nullptr)},
                               {"wall_seconds", m.wall_seconds}});
      if (select_on == "validation")
        ji["members"].back()["validation_accuracy"] = m.validation_accuracy ? Json(*m.validation_accuracy) : Json(nullptr);
    }
    for (const Event& e : iv.events) {
      Json je = {{"kind", e.kind}, {"member", e.member}, {"from", e.from}, {"hyperparameters_before", e.before},
                 {"hyperparameters_after", e.after}};
      if (e.kind == "replace_failed") je["exit_code"] = e.exit_code;
      ji["events"].push_back(je);
    }
    out["intervals"].push_back(ji);
  }
  const int b = best_member();
  if (b >= 0) {
    const MemberInterval& m = intervals.back().members[size_t(b)];
    out["best"] = {{"member", b}, {"run", m.run},
                   {"test_accuracy", m.test_accuracy ? Json(*m.test_accuracy) : Json(nullptr)}};
    if (select_on == "validation") out["best"]["validation_accuracy"] = *m.validation_accuracy;
  }
  return out;
}

Lineage Lineage::from_json(const Json& j, const std::string& where) {
  if (get<std::string>(j, "format", where) != "dtbench-pbt-lineage")
    throw BadInput(where + "/format: not a dtbench PBT lineage");
  if (get<int>(j, "version", where) != 1) throw BadInput(where + "/version: only version 1 is known");
  const int64_t population = get<int64_t>(j, "population", where);
  if (population < 2 || population > 100000)
    throw BadInput(where + "/population: expected an integer from 2 to 100000, got " + std::to_string(population));
  Lineage l;
  l.name = get<std::string>(j, "name", where);
  l.mode = get<std::string>(j, "mode", where);
  l.population = static_cast<int>(population);
  l.ready_steps = get<int64_t>(j, "ready_steps", where);
  l.total_steps = get<int64_t>(j, "total_steps", where);
  l.seed = get<uint64_t>(j, "seed", where);
  if (j.contains("select_on")) {
    l.select_on = get<std::string>(j, "select_on", where);
    if (l.select_on != "test" && l.select_on != "validation")
      throw BadInput(where + "/select_on: expected \"test\" or \"validation\", got \"" + l.select_on + "\"");
  }
  if (l.ready_steps < 1 || l.total_steps < 1)
    throw BadInput(where + "/ready_steps, /total_steps: expected at least 1 step each");
  l.spec = field(j, "spec", where);
  const Json& ivs = field(j, "intervals", where);
  if (!ivs.is_array()) throw BadInput(where + "/intervals: expected an array");
  for (size_t i = 0; i < ivs.size(); ++i) {
    const std::string wi = where + "/intervals/" + std::to_string(i);
    Interval iv;
    iv.index = get<int64_t>(ivs[i], "interval", wi);
    iv.start_step = get<int64_t>(ivs[i], "start_step", wi);
    iv.end_step = get<int64_t>(ivs[i], "end_step", wi);
    // The intervals are the ready points in order: i covers [i r, min((i + 1) r, total)) of r = ready_steps.
    const int64_t start = static_cast<int64_t>(i) * l.ready_steps, end = std::min(start + l.ready_steps, l.total_steps);
    if (iv.index != static_cast<int64_t>(i) || iv.start_step != start || iv.end_step != end || start >= l.total_steps)
      throw BadInput(wi + ": expected interval " + std::to_string(i) + " from step " + std::to_string(start) + " to " +
                     std::to_string(end) + " (ready_steps " + std::to_string(l.ready_steps) + ", total_steps " +
                     std::to_string(l.total_steps) + "), got interval " + std::to_string(iv.index) + " from " +
                     std::to_string(iv.start_step) + " to " + std::to_string(iv.end_step));
    const Json& ms = field(ivs[i], "members", wi);
    if (!ms.is_array() || ms.size() != size_t(l.population))
      throw BadInput(wi + "/members: expected an array of " + std::to_string(l.population) + " members");
    for (size_t k = 0; k < ms.size(); ++k) {
      const std::string wm = wi + "/members/" + std::to_string(k);
      MemberInterval m;
      m.member = get<int>(ms[k], "member", wm);
      if (m.member != static_cast<int>(k)) throw BadInput(wm + "/member: expected " + std::to_string(k) + " (members in order)");
      m.run = get<std::string>(ms[k], "run", wm);
      // Runs are named by member and interval (none for a member no longer trained): a name that is not is a folder
      // this file must not send the campaign to.
      if (!m.run.empty() && m.run != run_name(static_cast<int>(k), static_cast<int64_t>(i)))
        throw BadInput(wm + "/run: expected \"" + run_name(static_cast<int>(k), static_cast<int64_t>(i)) + "\", got \"" +
                       m.run + "\"");
      const Json& from = field(ms[k], "init_from", wm);
      m.init_from = from.is_null() ? "" : get<std::string>(ms[k], "init_from", wm);
      bool known_from = m.init_from.empty();  // a run the interval before holds (a member trained there)
      for (int b = 0; b < l.population && !known_from && i > 0; ++b)
        known_from = m.init_from == l.intervals[i - 1].members[size_t(b)].run;
      if (!known_from) throw BadInput(wm + "/init_from: \"" + m.init_from + "\" is no run of the interval before");
      m.hyperparameters = field(ms[k], "hyperparameters", wm);
      check_hyperparameters(m.hyperparameters, l.spec, wm + "/hyperparameters");
      m.status = get<std::string>(ms[k], "status", wm);
      if (m.status != "completed" && m.status != "failed" && m.status != "diverged")
        throw BadInput(wm + "/status: expected completed, failed or diverged, got \"" + m.status + "\"");
      m.exit_code = get<int>(ms[k], "exit_code", wm);
      const Json& acc = field(ms[k], "test_accuracy", wm);
      if (!acc.is_null()) m.test_accuracy = get<double>(ms[k], "test_accuracy", wm);
      if (ms[k].contains("validation_accuracy") && !ms[k]["validation_accuracy"].is_null())
        m.validation_accuracy = get<double>(ms[k], "validation_accuracy", wm);
      for (const auto& [key, a] : {std::pair<const char*, std::optional<double>>{"test_accuracy", m.test_accuracy},
                                   {"validation_accuracy", m.validation_accuracy}})
        if (a && !(*a >= 0 && *a <= 1)) throw BadInput(wm + "/" + key + ": expected a number in [0, 1]");
      m.wall_seconds = get<double>(ms[k], "wall_seconds", wm);
      if (!(m.wall_seconds >= 0)) throw BadInput(wm + "/wall_seconds: expected a number >= 0");
      iv.members.push_back(std::move(m));
    }
    const Json& es = field(ivs[i], "events", wi);
    if (!es.is_array()) throw BadInput(wi + "/events: expected an array");
    for (size_t k = 0; k < es.size(); ++k) {
      const std::string we = wi + "/events/" + std::to_string(k);
      Event e;
      e.kind = get<std::string>(es[k], "kind", we);
      e.member = get<int>(es[k], "member", we);
      e.from = get<int>(es[k], "from", we);
      for (const auto& [key, v] : {std::pair<const char*, int>{"member", e.member}, {"from", e.from}})
        if (v < 0 || v >= l.population)
          throw BadInput(we + "/" + key + ": " + std::to_string(v) + " is not a member of a population of " +
                         std::to_string(l.population));
      if (e.kind != "exploit" && e.kind != "replace_failed" && e.kind != "replace_diverged")
        throw BadInput(we + "/kind: expected exploit, replace_failed or replace_diverged, got \"" + e.kind + "\"");
      e.before = field(es[k], "hyperparameters_before", we);
      e.after = field(es[k], "hyperparameters_after", we);
      check_hyperparameters(e.after, l.spec, we + "/hyperparameters_after");
      if (e.kind == "replace_failed") e.exit_code = get<int>(es[k], "exit_code", we);
      iv.events.push_back(std::move(e));
    }
    l.intervals.push_back(std::move(iv));
  }
  return l;
}

std::optional<double> Lineage::score(const MemberInterval& m) const {
  return select_on == "validation" ? m.validation_accuracy : m.test_accuracy;
}

int Lineage::best_member() const {
  if (intervals.empty()) return -1;
  int best = -1;
  for (const MemberInterval& m : intervals.back().members)
    if (score(m) && (best < 0 || *score(m) > *score(intervals.back().members[size_t(best)]))) best = m.member;
  return best;
}

std::vector<MemberInterval> Lineage::ancestry(int member) const {
  std::vector<MemberInterval> out;
  if (intervals.empty()) return out;
  const MemberInterval* at = &intervals.back().members.at(size_t(member));
  for (size_t i = intervals.size(); i-- > 0;) {
    out.insert(out.begin(), *at);
    // The first interval, or a random-search member that diverged earlier (no run since): the chain ends.
    if (i == 0 || at->init_from.empty()) break;
    const Interval& before = intervals[i - 1];
    const auto it = std::find_if(before.members.begin(), before.members.end(),
                                 [&](const MemberInterval& m) { return m.run == at->init_from; });
    if (it == before.members.end())
      throw BadInput("lineage: run " + at->run + " continued " + at->init_from + ", which interval " +
                     std::to_string(before.index) + " does not hold");
    at = &*it;
  }
  return out;
}

Lineage read_lineage(const std::filesystem::path& file) {
  return Lineage::from_json(read_json_file(file.string(), "the PBT lineage"), file.string() + ": ");
}

void write_lineage(const std::filesystem::path& file, const Lineage& l) { write_json_atomic(file, l.to_json(), false); }

}  // namespace dtbench::pbt
