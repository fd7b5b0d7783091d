// The campaign index (DIR/campaign.json of `dtbench sweep --out DIR`): the sweep's axes, its points
// and every run's files, paths relative to DIR. slurm/ writes it; `dtbench table` (analysis/) and
// analysis/plot.py read it. A run listed here without a record is missing, not forgotten.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/json.hpp"

namespace dtbench {

struct CampaignIndex {
  // One dimension of the grid: one key, or the keys of a zip group. `pointer` locates it in the spec.
  struct Axis {
    std::string pointer;
    std::vector<std::string> keys;
    bool operator==(const Axis&) const = default;
  };
  struct Run {
    std::string name;
    int64_t seed = 0;
    std::string config, record, script;  // relative to the campaign folder
    int64_t array_task = -1;             // the run's task in the job-array script; -1: a script of its own
    bool operator==(const Run&) const = default;
  };
  struct Point {
    std::string id, label;
    std::vector<std::pair<std::string, Json>> values;  // axis key -> value, in axis order
    int64_t ranks = 1;
    Json slurm;  // the point's resolved Slurm section
    std::vector<Run> runs;
    bool operator==(const Point&) const = default;
  };

  std::string name, description;
  std::string written_utc;
  std::string generated_by;  // "dtbench 0.1.0 (git abc123)"
  std::vector<Axis> axes;
  int64_t repeats = 1;
  std::vector<std::string> program;  // the program and leading arguments each run starts
  std::vector<Point> points;

  Json to_json() const;
  // Throws BadInput naming the JSON pointer of the first field that is missing, of the wrong type or
  // unexpected.
  static CampaignIndex from_json(const Json& j);
  bool operator==(const CampaignIndex&) const = default;
};

// Reads DIR/campaign.json. Throws BadInput "<path>: ..." when it cannot be read.
CampaignIndex read_campaign_index(const std::filesystem::path& file);

}  // namespace dtbench
