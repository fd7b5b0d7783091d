// Reading a folder of run records for tables and plots.
//
// A campaign folder written by `dtbench sweep` has campaign.json: its points and runs are taken from
// there, so a run without a record (not run yet, lost, failed before writing one) still shows up as
// missing instead of vanishing. Any other folder is scanned for run records (*.json but configs,
// specs and indexes, which are JSON of another kind); records are grouped into points by the config
// keys that differ between them (seed, name and output aside) and by the rank count.
//
// A record file that exists but cannot be read (truncated, not JSON, NaN, a later schema_version, a
// field missing or of the wrong type) is never dropped and never counted as done: its run is
// "unreadable", with read_run_record's reason (the file and the line:column and byte, or the JSON
// pointer). Outside a campaign such runs form one point of their own, "unreadable".
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.hpp"
#include "core/run_record.hpp"

namespace dtbench::analysis {

struct RunData {
  std::string name;
  std::filesystem::path record_path;
  std::optional<RunRecord> record;  // absent when there is no readable record
  Json config;                 // the record's config, or the campaign's config file for a missing run
  int64_t ranks = 1;           // 0: unknown (an unreadable record outside a campaign)
  Json slurm;                  // the point's Slurm section (campaign folders only)
  // "done" (RunRecord::done), "stopped" (done, but ended by `train --stop-at` before its config's last step),
  // "failed", "preempted", "missing" or "unreadable".
  std::string state;
  std::string problem;         // why an unreadable record could not be read: "<file>: <why>"
};

struct PointData {
  std::string id;
  std::vector<std::pair<std::string, Json>> values;  // the point's axis values
  std::vector<RunData> runs;
};

struct CampaignData {
  std::string name;
  std::vector<std::string> keys;                     // axis keys, in order
  std::vector<std::vector<std::string>> zip_groups;  // keys that move together
  std::vector<PointData> points;
  // Every file the campaign is read from or owns (its index, spec and jobs file, configs, records and the files
  // beside them, sbatch scripts; a scanned folder's JSON files): what each is, and its path. An output given to a
  // command that read them must be none of these.
  std::vector<std::pair<std::string, std::filesystem::path>> files;
};

// Loads a campaign folder, any folder of records, or one record file. Throws BadInput when the path
// holds neither a campaign nor a record file, or its campaign index cannot be read.
CampaignData load_campaign(const std::filesystem::path& path);

// The campaign as read, for other tools (analysis/plot.py reads records only through this): its name, keys, zip
// groups and points, each run with its state, rank count, config, Slurm section, the problem of an unreadable
// record, and the record itself as RunRecord::to_json writes it (null when there is none): every record in it has
// passed RunRecord::from_json's checks.
Json campaign_json(const CampaignData& c);

// Why each unreadable record could not be read, in point order.
std::vector<std::string> unreadable_records(const CampaignData& c);

// A key's value for a run: "ranks", "global_batch", "per_rank_batch", "status" from the record,
// "slurm.KEY" from the point's Slurm section, anything else a dot path into the config. Null when
// absent.
Json key_value(const RunData& run, const std::string& key);
// Whether key_value takes `key` from the record (status, global_batch, per_rank_batch): a run not yet run has none.
bool key_from_record(const std::string& key);

}  // namespace dtbench::analysis
