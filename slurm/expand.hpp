// Sweep expansion: a spec becomes points (one per combination of axis values) and runs (one per
// point and repeat). Every run's config is resolved here, with the same strict rules as
// `dtbench config`, before anything is written, so a bad value anywhere in the grid stops the whole
// sweep with the spec key that caused it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/json.hpp"
#include "slurm/spec.hpp"

namespace dtbench::slurm {

struct Run {
  std::string name;  // file-safe: "p03-ring-nodes2-s1"; also the run config's /name
  int64_t seed = 0;
  Json config;       // fully resolved run config
};

struct Point {
  size_t index = 0;
  std::string id;                                  // "p03": p + zero-padded index
  std::string label;                               // "p03-ring-nodes2"
  std::vector<std::pair<std::string, Json>> values;  // axis key -> value, in axis order
  Json slurm;                                      // resolved Slurm section of this point
  int64_t ranks = 1;                               // nodes x tasks_per_node
  std::vector<Run> runs;
  // Config key an axis set for this point -> the spec pointer of its value ("reducer.name" -> "/axes/reducer.name/1").
  std::vector<std::pair<std::string, std::string>> set_by;
};

// Sets `value` at the dot path `key` of `doc`, creating objects on the way. `base_pointer` names
// the spec location for a clash with a non-object in the base config.
void set_path(Json& doc, const std::string& key, const Json& value, const std::string& base_pointer);

// The most runs (points x repeats) one sweep may have: Slurm's default MaxJobCount, the jobs a cluster
// holds at once. A larger sweep is refused before anything is written.
constexpr size_t kMaxRuns = 10000;

// Expands the grid. `runs_dir` (absolute) becomes every run's /output/dir, "<run>.json" its
// /output/record. Throws BadInput naming the spec key (/base/..., /axes/KEY/I, /zip/G/KEY/I) and
// the point.
// Each point's config is also checked on its nodes (config::check_node_rules: a reducer that cannot run across
// them): its /slurm nodes with on_slurm_nodes, else one (--local runs every rank on this machine).
std::vector<Point> expand(const Spec& spec, const std::filesystem::path& runs_dir, bool on_slurm_nodes = false);

// Where in the spec the config value at `config_pointer` ("/backend") of point `p` comes from: the axis value that
// set that key (or a key above it), else the base config ("/base/backend").
std::string spec_pointer(const Point& p, const std::string& config_pointer, const Json& base);

// "reducer.name=ring, slurm.nodes=2": a point's values for messages and tables.
std::string describe(const Point& p);

}  // namespace dtbench::slurm
