// The run record: everything needed to reproduce and to analyse one run. Its JSON form is defined by
// results/schema/run-record.schema.json (schema_version below); tests validate written records
// against it. Records are written once, atomically, and never overwritten (core/atomic_file.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace dtbench {

inline constexpr int kRunRecordSchemaVersion = 1;

enum class RunStatus { completed, reached_target, diverged, failed, preempted };
std::string to_string(RunStatus s);

// Mean seconds per optimizer step of each phase. exposed_comm is the time spent waiting for reducers
// after backward; comm is the reducers' total busy time, partly hidden behind backward.
struct StepTiming {
  double data = 0, forward = 0, backward = 0, exposed_comm = 0, comm = 0, optimizer = 0, total = 0;
  bool operator==(const StepTiming&) const = default;
};

// One evaluation on the test set (and the validation set, when the run holds one out).
struct EvalPoint {
  double epoch = 0;
  int64_t step = 0;
  int64_t samples = 0;
  double wall_seconds = 0;
  double train_loss = 0;
  double test_loss = 0;
  double test_accuracy = 0;
  double lr = 0;
  std::optional<double> b_simple;  // gradient noise scale estimate (McCandlish et al. 2018)
  // On the images held out of the training set (/data/validation_size); absent without them. The record writes
  // them only when present, so records without a validation set read as before.
  std::optional<double> validation_loss, validation_accuracy;
  bool operator==(const EvalPoint&) const = default;
};

// A curve point as the record holds it, and back (BadInput naming `pointer`'s field). The checkpoint's
// run state keeps its curve in the same form.
Json to_json(const EvalPoint& p);
EvalPoint eval_point_from_json(const Json& j, const std::string& pointer);

struct TimeToAccuracy {
  double seconds = 0;
  int64_t step = 0;
  double epoch = 0;
  int64_t samples = 0;
  bool operator==(const TimeToAccuracy&) const = default;
};

// The rules every curve the trainer writes keeps, for the readers of its records and of its checkpoints' headers: the
// points in the order of their steps and epochs, each point's samples its step's at `global_batch` (in every mode,
// asynchronous runs' steps included), and a time to accuracy, when there is one, at the first point whose test
// accuracy reaches `target`. BadInput naming the field by `curve_at` ("/curve") or `tta_at` ("/time_to_accuracy").
// (Wall seconds are not checked: the population-based training members of results/pbt, made by 01bf62e, restarted
// them at each --init-from, and those records stay readable.)
void check_curve(const std::vector<EvalPoint>& curve, int64_t global_batch, double target,
                 const std::optional<TimeToAccuracy>& tta, const std::string& curve_at, const std::string& tta_at);

struct RunRecord {
  std::string name;
  Json config;  // the fully resolved config
  int ranks = 1;
  int64_t global_batch = 0, per_rank_batch = 0;
  RunStatus status = RunStatus::failed;
  std::string status_detail;
  std::string started_utc, finished_utc;
  double wall_seconds = 0;
  int64_t steps = 0;
  double epochs = 0;
  int64_t samples = 0;
  StepTiming timing;
  double images_per_second = 0;               // over every timed step
  std::optional<double> steady_images_per_second;  // without each attempt's first step; none if no second step
  double bytes_communicated_per_step = 0;
  std::vector<EvalPoint> curve;
  double target_accuracy = 0;                 // 0 = no target
  std::optional<TimeToAccuracy> time_to_accuracy;
  Json extra = Json::object();                // module-specific sections (per_rank, resume, scaling, ...)
  Json provenance;                            // machine and build of the run; null: to_json stamps this process's

  // A finished run: completed, reached its target or diverged. A sweep rerun skips it and tables
  // count it; a failed run is tried again and a preempted one resumes.
  bool done() const;
  // A done run ended by `train --stop-at` before its config's last step (extra.stop_at below extra.total_steps) and
  // not by its target first: a part of its config's run, as a population-based training member's interval is.
  // Tables show it as "stopped", apart from the finished runs; a sweep runs it again.
  bool stopped_early() const;
  // The final model's test accuracy: the last evaluation's, 0 for a diverged run (it ends without a usable model;
  // its last evaluation may predate the divergence), nullopt without an evaluation. Tables and reports use this one.
  std::optional<double> final_accuracy() const;

  // The JSON document, provenance included.
  Json to_json() const;
  // The record in a to_json document; to_json of the result gives the document back. Throws
  // BadInput "not a dtbench run record" (no "kind": "dtbench-run-record"), or naming the JSON
  // pointer of the first field that is missing, of the wrong type or unexpected, or a
  // schema_version this build does not read.
  static RunRecord from_json(const Json& j);

  bool operator==(const RunRecord&) const = default;
};

// A record file as read: the record, or why the file holds none.
struct RecordFile {
  std::optional<RunRecord> record;
  std::string problem;      // without a record: "<path>: <why>" (cannot open, invalid JSON at line:column, ...)
  bool other_kind = false;  // the file is JSON without "kind": "dtbench-run-record" (a config, an index)
};
RecordFile read_run_record(const std::filesystem::path& path);

// Where a record's resolved config differs from the config its run was given (a sweep's configs/<run>.json), as a
// JSON pointer ("/" for the whole document); empty when they agree. /output is left out of both: it names where the
// run wrote, which a train command line may move.
std::string config_difference(const Json& recorded, const Json& given);

// A run's other files lie beside its record, named after it: the record's path with `extension` (".ckpt" for the
// checkpoint folder, ".mllog", ".weights") in place of its ".json" (added to a name without one). Train writes
// them there (run_paths); a sweep and pbt look for them there.
std::filesystem::path beside_record(const std::filesystem::path& record, const std::string& extension);

std::string utc_timestamp();

}  // namespace dtbench
