#include "core/run_record.hpp"

#include <ctime>

#include "core/provenance.hpp"

namespace dtbench {

std::string to_string(RunStatus s) {
  switch (s) {
    case RunStatus::completed: return "completed";
    case RunStatus::reached_target: return "reached-target";
    case RunStatus::diverged: return "diverged";
    case RunStatus::failed: return "failed";
    case RunStatus::preempted: return "preempted";
  }
  return "failed";
}

std::string utc_timestamp() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

Json RunRecord::to_json() const {
  Json r;
  r["schema_version"] = kRunRecordSchemaVersion;
  r["kind"] = "dtbench-run-record";
  r["name"] = name;
  r["status"] = to_string(status);
  r["status_detail"] = status_detail;
  r["config"] = config;
  r["seed"] = config.contains("seed") ? config["seed"] : Json(0);
  r["ranks"] = ranks;
  r["global_batch"] = global_batch;
  r["per_rank_batch"] = per_rank_batch;
  r["started_utc"] = started_utc;
  r["finished_utc"] = finished_utc;
  r["wall_seconds"] = wall_seconds;
  r["steps"] = steps;
  r["epochs"] = epochs;
  r["samples"] = samples;
  r["timing"] = {{"unit", "seconds per step (mean)"},
                 {"data", timing.data},
                 {"forward", timing.forward},
                 {"backward", timing.backward},
                 {"exposed_comm", timing.exposed_comm},
                 {"comm", timing.comm},
                 {"optimizer", timing.optimizer},
                 {"total", timing.total}};
  r["throughput"] = {{"images_per_second", images_per_second},
                     {"bytes_communicated_per_step", bytes_communicated_per_step}};
  Json curve_json = Json::array();
  for (const auto& p : curve) {
    curve_json.push_back({{"epoch", p.epoch},
                          {"step", p.step},
                          {"samples", p.samples},
                          {"wall_seconds", p.wall_seconds},
                          {"train_loss", p.train_loss},
                          {"test_loss", p.test_loss},
                          {"test_accuracy", p.test_accuracy},
                          {"lr", p.lr},
                          {"b_simple", p.b_simple ? Json(*p.b_simple) : Json(nullptr)}});
  }
  r["curve"] = curve_json;
  Json tta = {{"target", target_accuracy}, {"reached", time_to_accuracy.has_value()}};
  if (time_to_accuracy) {
    tta["seconds"] = time_to_accuracy->seconds;
    tta["step"] = time_to_accuracy->step;
    tta["epoch"] = time_to_accuracy->epoch;
    tta["samples"] = time_to_accuracy->samples;
  }
  r["time_to_accuracy"] = tta;
  r["extra"] = extra;
  r["provenance"] = provenance();
  return r;
}

}  // namespace dtbench
