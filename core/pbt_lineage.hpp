// The lineage of a population-based training campaign (pbt/): DIR/lineage.json, written after every ready
// point (atomically), read back by a continued `dtbench pbt`, by `dtbench table` and by analysis/plot.py.
//
//   {"format": "dtbench-pbt-lineage", "version": 1, "name", "mode", "population", "ready_steps", "total_steps",
//    "seed", "select_on": "test" | "validation", "spec": {...},
//    "intervals": [                              one per interval trained so far, in order
//      {"interval": 0, "start_step": 0, "end_step": 100,
//       "members": [{"member": 0, "run": "m00-i000", "init_from": null | "m03-i000",
//                    "hyperparameters": {...}, "status": "completed" | "failed" | "diverged", "exit_code": 0,
//                    "test_accuracy": 0.81 | null, "validation_accuracy": 0.82 | null (with select_on
//                    "validation"), "wall_seconds": 12.5}, ...],
//       "events": [{"kind": "exploit", "member": 5, "from": 1, "hyperparameters_before": {...},
//                   "hyperparameters_after": {...}},
//                  {"kind": "replace_failed", "member": 2, "from": 1, "exit_code": 1, ...},
//                  {"kind": "replace_diverged", ...}]}],
//    "best": {"member": 1, "run": "m01-i009", "test_accuracy": 0.89, "validation_accuracy": 0.9 (with select_on
//             "validation")}}
//
// Members are ranked (selection, "best") by the accuracy `select_on` names: on the validation set held out of
// the training set (/data/validation_size) when the spec says so, else on the test set. A lineage without the
// key (written before it existed) selected on the test set.
//
// `events` of interval i say what happened at its end (the ready point at end_step): which member continues
// from which member's checkpoint with which hyperparameters in interval i + 1. Each member's records are under
// DIR/runs/<run>.json; a record's curve holds the whole history its checkpoint inherited, so the last
// interval's record of a member is its full accuracy curve. A member of a random search that diverged is not
// trained further: its later entries have status "diverged" and an empty run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace dtbench::pbt {

struct MemberInterval {
  int member = 0;
  std::string run;
  std::string init_from;  // the run whose checkpoint it continued; empty in the first interval
  Json hyperparameters = Json::object();
  std::string status;     // "completed" | "failed" | "diverged"
  int exit_code = 0;
  std::optional<double> test_accuracy;  // the evaluation at the ready point; none when failed
  std::optional<double> validation_accuracy;  // the same on the validation set, when the runs hold one out
  double wall_seconds = 0;              // the record's wall time, from the start of its ancestry (carried on)
};

struct Event {
  std::string kind;  // "exploit" | "replace_failed" | "replace_diverged"
  int member = 0;
  int from = 0;
  Json before = Json::object(), after = Json::object();
  int exit_code = 0;  // replace_failed: the failed run's
};

struct Interval {
  int64_t index = 0, start_step = 0, end_step = 0;
  std::vector<MemberInterval> members;
  std::vector<Event> events;
};

struct Lineage {
  std::string name, mode;
  int population = 0;
  int64_t ready_steps = 0, total_steps = 0;
  uint64_t seed = 0;
  std::string select_on = "test";  // "test" | "validation": the accuracy that ranks members
  Json spec;  // the spec as given (base inlined): a continued campaign must have the same
  std::vector<Interval> intervals;

  Json to_json() const;
  static Lineage from_json(const Json& j, const std::string& where);  // BadInput naming the key
  // The accuracy that ranks m (select_on's); none when m has none.
  std::optional<double> score(const MemberInterval& m) const;
  // The member with the highest score at the last ready point (lowest index on ties); -1 when none.
  int best_member() const;
  // The ancestry of member m's final weights, one entry per interval, first to last: the run of m in the last
  // interval, the run it continued from (init_from) in the one before, and so on (shorter for a random-search
  // member that diverged: its chain stops at the entries without a run). Their hyperparameters are the schedule
  // that trained those weights.
  std::vector<MemberInterval> ancestry(int member) const;
};

Lineage read_lineage(const std::filesystem::path& file);
void write_lineage(const std::filesystem::path& file, const Lineage& l);

// The run name of member m's interval i: "m03-i002".
std::string run_name(int member, int64_t interval);

}  // namespace dtbench::pbt
