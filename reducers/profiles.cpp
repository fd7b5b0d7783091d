#include "reducers/profiles.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace dtbench {
namespace {

// A published figure > 0 and at most `most`, a bound no real one reaches: one of 1e300 made the claims' times
// infinite, printed as "inf" in the report (found by a hunt).
double positive(const JsonFields& f, const std::string& key, double most) {
  const double v = f.number(key);
  if (!(v > 0) || !(v <= most))
    throw BadInput(f.pointer(key) + ": expected a number in (0, " + config::fmt_number(most) + "], got " + f.at(key).dump());
  return v;
}

// A link's bytes per second, within what a link can be: its reciprocal prices every byte, and one of 1e-300 B/s
// made every time infinite (a table of lround(inf) steps) or, below 5.6e-309, crashed the split (SIGFPE).
double bandwidth(const JsonFields& f, const std::string& key) {
  const double v = f.number(key);
  if (!(v >= 1 && v <= 1e15))
    throw BadInput(f.pointer(key) + ": expected bytes per second in [1, 1e15], got " + f.at(key).dump());
  return v;
}

int count(const JsonFields& f, const std::string& key) {
  const int64_t v = f.integer(key);
  if (v < 1 || v > (int64_t{1} << 30)) throw BadInput(f.pointer(key) + ": expected an integer >= 1, got " + f.at(key).dump());
  return static_cast<int>(v);
}

std::string choice(const JsonFields& f, const std::string& key, std::initializer_list<const char*> allowed) {
  const std::string v = f.string(key);
  std::string list;
  for (const char* a : allowed) {
    if (v == a) return v;
    list += (list.empty() ? "" : ", ") + std::string("\"") + a + "\"";
  }
  throw BadInput(f.pointer(key) + ": expected one of " + list + ", got \"" + v + "\"");
}

// What a network figure is (networks.json's description says what each word means).
std::string basis(const JsonFields& f, const std::string& key) {
  return choice(f, key, {"nominal", "measured", "typical", "assumed"});
}

// The optional free-text note of an item: a string when given. Returns it, or "".
std::string note(const JsonFields& f) { return f.has("note") ? f.string("note") : ""; }

// [{title, url, where}], at least one: every figure has a source.
Json sources(const JsonFields& f) {
  const auto items = f.items("sources");
  if (items.empty()) throw BadInput(f.pointer("sources") + ": expected a non-empty list");
  for (const auto& s : items) {
    s.only({"title", "url", "where"});
    for (const char* k : {"title", "url", "where"})
      if (s.string(k).empty()) throw BadInput(s.pointer(k) + ": expected a non-empty string");
  }
  return f.at("sources");
}

// The name of item `f`, unique among `seen`.
std::string unique_name(const JsonFields& f, std::set<std::string>& seen) {
  const std::string name = f.string("name");
  if (name.empty()) throw BadInput(f.pointer("name") + ": expected a non-empty string");
  if (!seen.insert(name).second) throw BadInput(f.pointer("name") + ": \"" + name + "\" is given twice");
  return name;
}

// A name field that must name an entry of `known` (what = "network profile" ...).
std::string reference(const JsonFields& f, const std::string& key, const std::set<std::string>& known,
                      const std::string& what) {
  const std::string v = f.string(key);
  if (known.count(v)) return v;
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  throw BadInput(f.pointer(key) + ": no " + what + " \"" + v + "\" (there are: " + list + ")");
}

template <class T>
const T& by_name(const std::vector<T>& items, const std::string& name, const std::string& what,
                 const std::string& file) {
  for (const T& t : items)
    if (t.name == name) return t;
  std::string list;
  for (const T& t : items) list += (list.empty() ? "" : ", ") + t.name;
  throw BadInput("no " + what + " \"" + name + "\"" + (file.empty() ? "" : " in " + file) + " (there are: " + list + ")");
}

void check_kind(const JsonFields& root, const char* kind) {
  if (root.string("kind") != kind) throw BadInput("/kind: expected \"" + std::string(kind) + "\"");
}

void parse_networks(const Json& doc, Profiles& p) {
  const JsonFields root(doc, "");
  root.only({"kind", "description", "gamma", "profiles", "clusters"});
  check_kind(root, "dtbench-network-profiles");
  root.string("description");
  const JsonFields gamma = root.fields("gamma");
  gamma.only({"seconds_per_byte", "basis", "note", "sources"});
  p.gamma_s_per_byte = positive(gamma, "seconds_per_byte", 1e-3);
  basis(gamma, "basis");
  note(gamma);
  p.gamma_sources = sources(gamma);

  std::set<std::string> names;
  for (const auto& f : root.items("profiles")) {
    f.only({"name", "label", "alpha_s", "alpha_basis", "bandwidth_bytes_per_s", "bandwidth_basis", "sources", "note"});
    // A braced list evaluates left to right: the first bad field is the one reported.
    p.networks.push_back({.name = unique_name(f, names),
                          .label = f.string("label"),
                          .alpha_s = positive(f, "alpha_s", 1),
                          .bandwidth_bytes_per_s = bandwidth(f, "bandwidth_bytes_per_s"),
                          .alpha_basis = basis(f, "alpha_basis"),
                          .bandwidth_basis = basis(f, "bandwidth_basis"),
                          .sources = sources(f)});
    note(f);
  }
  if (p.networks.empty()) throw BadInput("/profiles: expected a non-empty list");

  std::set<std::string> cluster_names;
  for (const auto& f : root.items("clusters")) {
    f.only({"name", "label", "servers", "devices_per_server", "intra", "inter", "sources", "note"});
    p.clusters.push_back({.name = unique_name(f, cluster_names),
                          .label = f.string("label"),
                          .servers = count(f, "servers"),
                          .devices_per_server = count(f, "devices_per_server"),
                          .intra = reference(f, "intra", names, "network profile"),
                          .inter = reference(f, "inter", names, "network profile"),
                          .sources = sources(f)});
    note(f);
  }
}

void parse_compute(const Json& doc, Profiles& p) {
  const JsonFields root(doc, "");
  root.only({"kind", "description", "devices", "models", "datasets", "runs"});
  check_kind(root, "dtbench-compute-profiles");
  root.string("description");
  std::set<std::string> devices, models, datasets, runs, clusters;
  for (const auto& c : p.clusters) clusters.insert(c.name);
  for (const auto& f : root.items("devices")) {
    f.only({"name", "label", "images_per_s", "batch_per_device", "basis", "note", "sources"});
    DeviceThroughput d;
    d.name = unique_name(f, devices);
    d.label = f.string("label");
    d.images_per_s = positive(f, "images_per_s", 1e12);
    d.batch_per_device = count(f, "batch_per_device");
    d.basis = choice(f, "basis", {"measured", "derived"});
    d.sources = sources(f);
    if (d.basis == "derived" && note(f).empty()) throw BadInput(f.pointer("note") + ": missing (how it was derived)");
    p.devices.push_back(std::move(d));
  }
  for (const auto& f : root.items("models")) {
    f.only({"name", "parameters", "sources"});
    p.model_parameters[unique_name(f, models)] = count(f, "parameters");
    sources(f);
  }
  for (const auto& f : root.items("datasets")) {
    f.only({"name", "train_images", "sources"});
    p.dataset_images[unique_name(f, datasets)] = count(f, "train_images");
    sources(f);
  }
  for (const auto& f : root.items("runs")) {
    f.only({"name", "work", "cluster", "device", "model", "dataset", "bytes_per_parameter", "batch", "epochs",
            "intra_reducer", "inter_reducer", "published_minutes", "note"});
    PublishedRun r;
    r.name = unique_name(f, runs);
    r.work = f.string("work");
    r.cluster = reference(f, "cluster", clusters, "cluster (networks.json /clusters)");
    r.device = reference(f, "device", devices, "device");
    r.model = reference(f, "model", models, "model");
    r.dataset = reference(f, "dataset", datasets, "dataset");
    r.bytes_per_parameter = static_cast<int>(f.integer("bytes_per_parameter"));
    if (r.bytes_per_parameter != 2 && r.bytes_per_parameter != 4)
      throw BadInput(f.pointer("bytes_per_parameter") + ": expected 2 (fp16) or 4 (fp32)");
    r.batch = count(f, "batch");
    r.epochs = positive(f, "epochs", 1e6);
    for (const char* k : {"intra_reducer", "inter_reducer"}) {
      const std::string name = f.string(k);
      // Each of the two is a flat allreduce on one link: the hierarchical reducer is their pair already.
      if (name == "hierarchical")
        throw BadInput(f.pointer(k) + ": a flat reducer, one per link; \"hierarchical\" is the intra and inter pair itself");
      if (name == "shared_memory" && std::string(k) == "inter_reducer")  // (found by a hunt)
        throw BadInput(f.pointer(k) + ": shared_memory reduces within one node's memory and cannot run between servers");
      try {
        cost_terms(name, 2, 1, ReducerOptions{});  // a reducer with a cost formula
      } catch (const BadInput& e) {
        throw BadInput(f.pointer(k) + ": " + e.what());
      }
      (std::string(k) == "intra_reducer" ? r.intra_reducer : r.inter_reducer) = name;
    }
    r.published_minutes = positive(f, "published_minutes", 1e9);
    r.note = note(f);
    p.runs.push_back(std::move(r));
  }
}

}  // namespace

CostParams NetworkProfile::params(double gamma) const {
  return {alpha_s, alpha_s, 1.0 / bandwidth_bytes_per_s, gamma};
}

const NetworkProfile& Profiles::network(const std::string& name) const {
  return by_name(networks, name, "network profile", networks_file);
}
const Cluster& Profiles::cluster(const std::string& name) const {
  return by_name(clusters, name, "cluster", networks_file);
}
const DeviceThroughput& Profiles::device(const std::string& name) const {
  return by_name(devices, name, "device", compute_file);
}
const PublishedRun& Profiles::run(const std::string& name) const { return by_name(runs, name, "published run", compute_file); }

Profiles parse_profiles(const Json& networks, const std::string& networks_file, const Json& compute,
                        const std::string& compute_file) {
  Profiles p;
  try {
    parse_networks(networks, p);
  } catch (const BadInput& e) {
    throw BadInput(networks_file + ": " + e.what());
  }
  try {
    parse_compute(compute, p);
  } catch (const BadInput& e) {
    throw BadInput(compute_file + ": " + e.what());
  }
  p.networks_file = networks_file, p.compute_file = compute_file;  // after parsing: its own messages name them once
  return p;
}

Profiles load_profiles(const std::filesystem::path& dir) {
  const std::string networks = (dir / "networks.json").string(), compute = (dir / "compute.json").string();
  const Json networks_doc = read_json_file(networks, "network profiles");  // read in order: errors name the first
  return parse_profiles(networks_doc, networks, read_json_file(compute, "compute profiles"), compute);
}

}  // namespace dtbench
