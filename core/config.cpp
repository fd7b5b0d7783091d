#include "core/config.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/config_spec.hpp"
#include "core/error.hpp"

namespace dtbench::config {
namespace {

using Kind = Node::Kind;

std::string fmt_number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::floor(v) == v && std::fabs(v) < 1e16) return std::to_string(static_cast<int64_t>(v));
  std::ostringstream s;
  s << v;
  return s.str();
}

// What a value looked like, for messages: strings quoted, long values cut.
std::string shown(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string range_text(const Node& n) {
  bool has_lo = !std::isinf(n.lo), has_hi = !std::isinf(n.hi);
  if (has_lo && has_hi)
    return std::string(" in ") + (n.lo_open ? "(" : "[") + fmt_number(n.lo) + ", " + fmt_number(n.hi) +
           (n.hi_open ? ")" : "]");
  if (has_lo) return std::string(n.lo_open ? " > " : " >= ") + fmt_number(n.lo);
  if (has_hi) return std::string(n.hi_open ? " < " : " <= ") + fmt_number(n.hi);
  return "";
}

std::string expectation(const Node& n) {
  switch (n.kind) {
    case Kind::number: return "a number" + range_text(n);
    case Kind::integer: return "an integer" + range_text(n);
    case Kind::boolean: return "true or false";
    case Kind::integer_list: return "a list of integers >= 0";
    case Kind::object:
    case Kind::variant: return "an object";
    case Kind::string:
      if (n.choices.empty()) return "a string";
      {
        std::string s = "one of ";
        for (size_t i = 0; i < n.choices.size(); ++i) s += (i ? ", \"" : "\"") + n.choices[i] + "\"";
        return s;
      }
  }
  return "a value";
}

[[noreturn]] void fail(const std::string& pointer, const std::string& message) {
  throw BadInput((pointer.empty() ? std::string("/") : pointer) + ": " + message);
}

[[noreturn]] void wrong(const std::string& pointer, const Node& n, const Json& got) {
  fail(pointer, "expected " + expectation(n) + ", got " + shown(got));
}

bool in_range(const Node& n, double v) {
  if (std::isnan(v)) return false;
  if (n.lo_open ? !(v > n.lo) : !(v >= n.lo)) return false;
  if (n.hi_open ? !(v < n.hi) : !(v <= n.hi)) return false;
  return true;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

[[noreturn]] void unknown_key(const std::string& pointer, const std::string& key, const Fields& fields) {
  std::vector<std::string> valid;
  for (const auto& [k, f] : fields) valid.push_back(k);
  throw_unknown_key(pointer, key, valid);
}

Json resolve_node(const Node& n, const Json* user, const std::string& pointer);

Json resolve_fields(const Fields& fields, const Json* user, const std::string& pointer) {
  if (user && !user->is_object()) fail(pointer, "expected an object, got " + shown(*user));
  if (user) {
    for (auto it = user->begin(); it != user->end(); ++it) {
      bool known = std::any_of(fields.begin(), fields.end(), [&](const auto& f) { return f.first == it.key(); });
      if (!known) unknown_key(pointer, pointer_token(it.key()), fields);
    }
  }
  Json out = Json::object();
  for (const auto& [key, field] : fields) {
    const Json* sub = nullptr;
    if (user && user->contains(key)) sub = &(*user)[key];
    out[key] = resolve_node(field, sub, pointer + "/" + key);
  }
  return out;
}

Json resolve_node(const Node& n, const Json* user, const std::string& pointer) {
  switch (n.kind) {
    case Kind::object: return resolve_fields(n.fields, user, pointer);
    case Kind::variant: {
      if (user && !user->is_object()) fail(pointer, "expected an object, got " + shown(*user));
      std::string name = n.def.get<std::string>();
      if (user && user->contains(n.selector)) {
        const Json& sel = (*user)[n.selector];
        if (!sel.is_string()) fail(pointer + "/" + n.selector, "expected a string, got " + shown(sel));
        name = sel.get<std::string>();
      }
      Fields storage;
      const Fields* fields = variant_fields(n, name, storage);
      if (!fields) {
        std::string names;
        for (const auto& [v, f] : n.variants) names += (names.empty() ? "\"" : ", \"") + v + "\"";
        fail(pointer + "/" + n.selector, "expected one of " + names + ", got \"" + name + "\"");
      }
      Json rest = user ? *user : Json::object();
      rest.erase(n.selector);
      Json out = Json::object();
      out[n.selector] = name;
      Json resolved = resolve_fields(*fields, &rest, pointer);
      for (auto it = resolved.begin(); it != resolved.end(); ++it) out[it.key()] = it.value();
      return out;
    }
    default: break;
  }
  if (!user) return n.def;
  const Json& v = *user;
  switch (n.kind) {
    case Kind::number:
      if (!v.is_number() || !in_range(n, v.get<double>())) wrong(pointer, n, v);
      return v;
    case Kind::integer: {
      if (!v.is_number()) wrong(pointer, n, v);
      double d = v.get<double>();
      if (std::floor(d) != d || !in_range(n, d)) wrong(pointer, n, v);
      return Json(static_cast<int64_t>(d));
    }
    case Kind::boolean:
      if (!v.is_boolean()) wrong(pointer, n, v);
      return v;
    case Kind::string:
      if (!v.is_string()) wrong(pointer, n, v);
      if (!n.choices.empty() &&
          std::find(n.choices.begin(), n.choices.end(), v.get<std::string>()) == n.choices.end())
        wrong(pointer, n, v);
      return v;
    case Kind::integer_list: {
      if (!v.is_array()) wrong(pointer, n, v);
      Json out = Json::array();
      for (size_t i = 0; i < v.size(); ++i) {
        const Json& e = v[i];
        if (!e.is_number() || std::floor(e.get<double>()) != e.get<double>() || e.get<double>() < 0)
          fail(pointer + "/" + std::to_string(i), "expected an integer >= 0, got " + shown(e));
        out.push_back(static_cast<int64_t>(e.get<double>()));
      }
      return out;
    }
    default: break;
  }
  return v;
}

bool user_sets(const Json& user, const char* section, const char* key) {
  return user.is_object() && user.contains(section) && user[section].is_object() && user[section].contains(key);
}

// Two keys of which the user gives one: the one the user did not give is switched off (0) so a user
// who writes only "per_rank" does not collide with the default "global".
void either_or(const Json& user, Json& out, const char* section, const char* a, const char* b) {
  bool ua = user_sets(user, section, a), ub = user_sets(user, section, b);
  std::string pa = std::string("/") + section + "/" + a, pb = std::string("/") + section + "/" + b;
  if (ua && ub && out[section][a].get<double>() > 0 && out[section][b].get<double>() > 0)
    fail(pa, std::string("give either ") + pa + " or " + pb + ", not both");
  if (ub && !ua) out[section][a] = 0;
  if (ua && !ub) out[section][b] = 0;
}

void check_cross_fields(const Json& user, Json& c, int ranks) {
  either_or(user, c, "batch", "global", "per_rank");
  either_or(user, c, "duration", "epochs", "steps");
  either_or(user, c, "eval", "every_epochs", "every_steps");

  if (c["batch"]["global"].get<int64_t>() == 0 && c["batch"]["per_rank"].get<int64_t>() == 0)
    fail("/batch", "one of /batch/global and /batch/per_rank must be >= 1");
  if (c["duration"]["epochs"].get<int64_t>() == 0 && c["duration"]["steps"].get<int64_t>() == 0)
    fail("/duration", "one of /duration/epochs and /duration/steps must be >= 1");

  const Json& w = c["schedule"]["warmup"];
  if (w["epochs"].get<double>() > 0 && w["steps"].get<int64_t>() > 0)
    fail("/schedule/warmup/epochs", "give either /schedule/warmup/epochs or /schedule/warmup/steps, not both");
  // Warmup against run length when both are in the same unit; the trainer checks mixed units once it
  // knows the steps per epoch.
  int64_t run_epochs = c["duration"]["epochs"].get<int64_t>(), run_steps = c["duration"]["steps"].get<int64_t>();
  if (run_epochs > 0 && w["epochs"].get<double>() > static_cast<double>(run_epochs))
    fail("/schedule/warmup/epochs", "warmup of " + fmt_number(w["epochs"].get<double>()) +
                                        " epochs is longer than the run (" + std::to_string(run_epochs) + " epochs)");
  if (run_steps > 0 && w["steps"].get<int64_t>() > run_steps)
    fail("/schedule/warmup/steps", "warmup of " + std::to_string(w["steps"].get<int64_t>()) +
                                       " steps is longer than the run (" + std::to_string(run_steps) + " steps)");
  if (c["schedule"]["name"] == "multistep") {
    const Json& m = c["schedule"]["milestones"];
    for (size_t i = 1; i < m.size(); ++i)
      if (m[i].get<int64_t>() <= m[i - 1].get<int64_t>())
        fail("/schedule/milestones/" + std::to_string(i), "milestones must increase, got " + shown(m));
  }

  bool async_reducer = c["reducer"]["name"] == "async_parameter_server";
  bool async_mode = c["parallel"]["mode"] == "async";
  if (async_reducer != async_mode)
    fail(async_mode ? "/reducer/name" : "/parallel/mode",
         "asynchronous SGD needs /parallel/mode \"async\" together with /reducer/name \"async_parameter_server\"");
  if (async_mode && c["parallel"]["sync_bn"].get<bool>())
    fail("/parallel/sync_bn", "synchronised batch norm needs the ranks to step together; asynchronous SGD's "
                              "workers do not (use mode \"sync\", \"local_sgd\" or \"post_local_sgd\")");
  if (c["backend"] == "gpu" && c["parallel"]["sync_bn"].get<bool>())
    fail("/parallel/sync_bn", "synchronised batch norm is implemented for the cpu backend only");

  if (ranks > 0) {
    int64_t global = c["batch"]["global"].get<int64_t>();
    if (global > 0 && global % ranks != 0)
      fail("/batch/global", std::to_string(global) + " is not divisible by the rank count " + std::to_string(ranks));
    if (c["reducer"]["name"] == "parameter_server" && c["reducer"]["servers"].get<int64_t>() > ranks)
      fail("/reducer/servers", std::to_string(c["reducer"]["servers"].get<int64_t>()) +
                                   " servers is more than the rank count " + std::to_string(ranks));
  }
}

}  // namespace

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string closest_name(const std::string& key, const std::vector<std::string>& valid) {
  std::string best;
  size_t best_d = 3;  // suggest only close misspellings
  for (const auto& k : valid) {
    size_t d = edit_distance(key, k);
    if (d < best_d) best_d = d, best = k;
  }
  return best;
}

void throw_unknown_key(const std::string& pointer, const std::string& key, const std::vector<std::string>& valid) {
  std::string keys;
  for (const auto& k : valid) keys += (keys.empty() ? "" : ", ") + k;
  std::string best = closest_name(key, valid);
  std::string msg = "unknown key";
  if (!best.empty()) msg += " (did you mean \"" + best + "\"?)";
  fail(pointer + "/" + key, msg + "; valid keys here: " + keys);
}

Json defaults() { return resolve_node(schema(), nullptr, ""); }

void apply_override(Json& user, std::string_view assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw BadInput("--set " + std::string(assignment) + ": expected key.path=value");
  std::string path(assignment.substr(0, eq));
  std::string text(assignment.substr(eq + 1));
  Json value;
  try {
    value = Json::parse(text);
  } catch (const Json::parse_error&) {
    value = text;  // a bare word such as adam or results/x
  }
  if (!user.is_object()) user = Json::object();
  Json* node = &user;
  size_t start = 0;
  for (;;) {
    size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) throw BadInput("--set " + std::string(assignment) + ": empty key in \"" + path + "\"");
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return;
    }
    Json& next = (*node)[key];
    if (!next.is_object()) next = Json::object();
    node = &next;
    start = dot + 1;
  }
}

Json resolve(const Json& user, int ranks) {
  Json out = resolve_node(schema(), &user, "");
  check_cross_fields(user, out, ranks);
  return out;
}

Json read_user(const std::string& path, const std::vector<std::string>& overrides) {
  Json user = Json::object();
  if (!path.empty()) {
    user = read_json_file(path, "config file");
    if (!user.is_object()) throw BadInput(path + ": a config must be a JSON object");
  }
  for (const auto& o : overrides) apply_override(user, o);
  return user;
}

Json load(const std::string& path, const std::vector<std::string>& overrides, int ranks) {
  Json user = read_user(path, overrides);
  try {
    return resolve(user, ranks);
  } catch (const BadInput& e) {
    if (path.empty()) throw;
    throw BadInput(path + ": " + e.what());
  }
}

long per_rank_batch(const Json& c, int ranks) {
  int64_t per = c["batch"]["per_rank"].get<int64_t>();
  if (per > 0) return per;
  return c["batch"]["global"].get<int64_t>() / std::max(ranks, 1);
}

long global_batch(const Json& c, int ranks) {
  int64_t global = c["batch"]["global"].get<int64_t>();
  if (global > 0) return global;
  return c["batch"]["per_rank"].get<int64_t>() * std::max(ranks, 1);
}

}  // namespace dtbench::config
