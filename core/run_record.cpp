#include "core/run_record.hpp"

#include <algorithm>
#include <ctime>
#include <limits>
#include <sstream>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/provenance.hpp"

namespace dtbench {
namespace {

constexpr const char* kKind = "dtbench-run-record";
constexpr const char* kTimingUnit = "seconds per step (mean)";
// The value ranges are the schema's (results/schema/run-record.schema.json): a negative epoch count or an accuracy
// of 5 would otherwise reach tables and MLPerf's RCP files as a result.
constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();
constexpr RunStatus kStatuses[] = {RunStatus::completed, RunStatus::reached_target, RunStatus::diverged,
                                   RunStatus::failed, RunStatus::preempted};

// A record names its kind; a config or a campaign index does not.
bool is_record(const Json& j) { return j.is_object() && j.value("kind", Json()) == kKind; }

// The top-level "seed": a copy of the config's, kept for tools that do not look inside the config.
Json seed_of(const Json& config) { return config.contains("seed") ? config["seed"] : Json(0); }

RunStatus status_from(const JsonFields& f) {
  const std::string text = f.string("status");
  for (RunStatus s : kStatuses)
    if (to_string(s) == text) return s;
  throw BadInput(f.pointer("status") + ": unknown status \"" + text + "\"");
}

// A loss is null in the file when it was not finite (a diverged run).
double loss(const JsonFields& f, const char* key) {
  return f.at(key).is_null() ? std::numeric_limits<double>::quiet_NaN() : f.number(key);
}

EvalPoint eval_point_from(const JsonFields& f) {
  f.only({"epoch", "step", "samples", "wall_seconds", "train_loss", "test_loss", "test_accuracy", "lr", "b_simple",
          "validation_loss", "validation_accuracy"});
  const bool validated = f.has("validation_accuracy") || f.has("validation_loss");
  return {.epoch = f.nonneg_number("epoch"),
          .step = f.integer("step", 0, kMaxCount),
          .samples = f.integer("samples", 0, kMaxCount),
          .wall_seconds = f.nonneg_number("wall_seconds"),
          .train_loss = loss(f, "train_loss"),
          .test_loss = loss(f, "test_loss"),
          .test_accuracy = f.fraction("test_accuracy"),
          .lr = f.nonneg_number("lr"),
          .b_simple = f.at("b_simple").is_null() ? std::nullopt : std::optional(f.number("b_simple")),
          .validation_loss = validated ? std::optional(loss(f, "validation_loss")) : std::nullopt,
          .validation_accuracy = validated ? std::optional(f.fraction("validation_accuracy")) : std::nullopt};
}

StepTiming timing_from(const JsonFields& f) {
  f.only({"unit", "data", "forward", "backward", "exposed_comm", "comm", "optimizer", "total"});
  if (f.string("unit") != kTimingUnit)
    throw_wrong_type(f.pointer("unit"), std::string("\"") + kTimingUnit + "\"", f.at("unit"));
  return {.data = f.nonneg_number("data"),
          .forward = f.nonneg_number("forward"),
          .backward = f.nonneg_number("backward"),
          .exposed_comm = f.nonneg_number("exposed_comm"),
          .comm = f.nonneg_number("comm"),
          .optimizer = f.nonneg_number("optimizer"),
          .total = f.nonneg_number("total")};
}

}  // namespace

Json to_json(const EvalPoint& p) {
  Json j = {{"epoch", p.epoch},
          {"step", p.step},
          {"samples", p.samples},
          {"wall_seconds", p.wall_seconds},
          {"train_loss", p.train_loss},
          {"test_loss", p.test_loss},
          {"test_accuracy", p.test_accuracy},
          {"lr", p.lr},
          {"b_simple", p.b_simple ? Json(*p.b_simple) : Json(nullptr)}};
  if (p.validation_accuracy) {
    j["validation_loss"] = p.validation_loss ? Json(*p.validation_loss) : Json(nullptr);
    j["validation_accuracy"] = *p.validation_accuracy;
  }
  return j;
}

EvalPoint eval_point_from_json(const Json& j, const std::string& pointer) {
  return eval_point_from(JsonFields(j, pointer));
}

void check_curve(const std::vector<EvalPoint>& curve, int64_t global_batch, double target,
                 const std::optional<TimeToAccuracy>& tta, const std::string& curve_at, const std::string& tta_at) {
  for (size_t i = 0; i < curve.size(); ++i) {
    const EvalPoint& p = curve[i];
    const std::string at = curve_at + "/" + std::to_string(i);
    int64_t samples = 0;
    if (__builtin_mul_overflow(p.step, global_batch, &samples) || p.samples != samples)
      throw BadInput(at + "/samples: " + std::to_string(p.samples) + " is not step " + std::to_string(p.step) +
                     " times the global batch (" + std::to_string(global_batch) + ")");
    if (i > 0 && (p.step < curve[i - 1].step || p.epoch < curve[i - 1].epoch))
      throw BadInput(at + ": an evaluation before the one at " + curve_at + "/" + std::to_string(i - 1) +
                     " (its step or epoch is less)");
  }
  if (!tta) return;
  const auto first = std::find_if(curve.begin(), curve.end(),
                                  [&](const EvalPoint& p) { return target > 0 && p.test_accuracy >= target; });
  if (first == curve.end() || TimeToAccuracy{first->wall_seconds, first->step, first->epoch, first->samples} != *tta) {
    throw BadInput(tta_at + ": reached, but it is not the first point of " + curve_at + " at test accuracy >= its " +
                   "target " + config::fmt_number(target) + " (its step, epoch, samples and seconds)");
  }
}

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

bool RunRecord::done() const {
  return status == RunStatus::completed || status == RunStatus::reached_target || status == RunStatus::diverged;
}

// Its final accuracy and time are not its config's (a table took the median of an 8-step and a 40-step run of one
// config as "2/2 done"; a hunt).
bool RunRecord::stopped_early() const {
  const Json& stop = extra.contains("stop_at") ? extra["stop_at"] : Json();
  const Json& total = extra.contains("total_steps") ? extra["total_steps"] : Json();
  // A run that stops at its target and reached it at the stop step would have ended there anyway.
  const Json* eval = config.contains("eval") ? &config["eval"] : nullptr;
  const bool ended_by_target = time_to_accuracy && time_to_accuracy->step == steps && eval && eval->is_object() &&
                               eval->value("stop_at_target", false) == true;
  return done() && status != RunStatus::diverged && !ended_by_target && stop.is_number_integer() &&
         total.is_number_integer() && stop.get<int64_t>() < total.get<int64_t>() && steps >= stop.get<int64_t>();
}

std::optional<double> RunRecord::final_accuracy() const {
  if (status == RunStatus::diverged) return 0.0;
  if (curve.empty()) return std::nullopt;
  return curve.back().test_accuracy;
}

Json RunRecord::to_json() const {
  Json r;
  r["schema_version"] = kRunRecordSchemaVersion;
  r["kind"] = kKind;
  r["name"] = name;
  r["status"] = to_string(status);
  r["status_detail"] = status_detail;
  r["config"] = config;
  r["seed"] = seed_of(config);
  r["ranks"] = ranks;
  r["global_batch"] = global_batch;
  r["per_rank_batch"] = per_rank_batch;
  r["started_utc"] = started_utc;
  r["finished_utc"] = finished_utc;
  r["wall_seconds"] = wall_seconds;
  r["steps"] = steps;
  r["epochs"] = epochs;
  r["samples"] = samples;
  r["timing"] = {{"unit", kTimingUnit},
                 {"data", timing.data},
                 {"forward", timing.forward},
                 {"backward", timing.backward},
                 {"exposed_comm", timing.exposed_comm},
                 {"comm", timing.comm},
                 {"optimizer", timing.optimizer},
                 {"total", timing.total}};
  r["throughput"] = {{"images_per_second", images_per_second},
                     {"bytes_communicated_per_step", bytes_communicated_per_step}};
  if (steady_images_per_second) r["throughput"]["steady_images_per_second"] = *steady_images_per_second;
  Json curve_json = Json::array();
  for (const auto& p : curve) curve_json.push_back(dtbench::to_json(p));
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
  r["provenance"] = provenance.is_null() ? dtbench::provenance() : provenance;
  return r;
}

RunRecord RunRecord::from_json(const Json& j) {
  if (!is_record(j)) throw BadInput("not a dtbench run record");
  JsonFields f(j, "");
  f.only({"schema_version", "kind", "name", "status", "status_detail", "config", "seed", "ranks", "global_batch",
          "per_rank_batch", "started_utc", "finished_utc", "wall_seconds", "steps", "epochs", "samples", "timing",
          "throughput", "curve", "time_to_accuracy", "extra", "provenance"});
  const int64_t version = f.integer("schema_version");
  if (version != kRunRecordSchemaVersion)
    throw BadInput(f.pointer("schema_version") + ": version " + std::to_string(version) +
                   (version > kRunRecordSchemaVersion ? " is newer than this dtbench reads (" +
                                                            std::to_string(kRunRecordSchemaVersion) + ")"
                                                      : " is unknown"));
  RunRecord r;
  r.name = f.string("name");
  r.status = status_from(f);
  r.status_detail = f.string("status_detail");
  r.config = f.object("config");
  if (f.at("seed") != seed_of(r.config)) throw BadInput(f.pointer("seed") + ": differs from /config/seed");
  r.ranks = static_cast<int>(f.integer("ranks", 1, std::numeric_limits<int>::max()));
  r.global_batch = f.integer("global_batch", 1, kMaxCount);
  r.per_rank_batch = f.integer("per_rank_batch", 1, kMaxCount);
  r.started_utc = f.string("started_utc");
  r.finished_utc = f.string("finished_utc");
  r.wall_seconds = f.nonneg_number("wall_seconds");
  r.steps = f.integer("steps", 0, kMaxCount);
  r.epochs = f.nonneg_number("epochs");
  r.samples = f.integer("samples", 0, kMaxCount);
  r.timing = timing_from(f.fields("timing"));
  const JsonFields tp = f.fields("throughput");
  tp.only({"images_per_second", "steady_images_per_second", "bytes_communicated_per_step"});
  r.images_per_second = tp.nonneg_number("images_per_second");
  if (tp.has("steady_images_per_second")) r.steady_images_per_second = tp.nonneg_number("steady_images_per_second");
  r.bytes_communicated_per_step = tp.nonneg_number("bytes_communicated_per_step");
  for (const JsonFields& p : f.items("curve")) r.curve.push_back(eval_point_from(p));
  const JsonFields tta = f.fields("time_to_accuracy");
  r.target_accuracy = tta.fraction("target");
  if (tta.boolean("reached")) {
    tta.only({"target", "reached", "seconds", "step", "epoch", "samples"});
    r.time_to_accuracy = TimeToAccuracy{tta.nonneg_number("seconds"), tta.integer("step", 0, kMaxCount),
                                        tta.nonneg_number("epoch"), tta.integer("samples", 0, kMaxCount)};
  } else {
    tta.only({"target", "reached"});
  }
  r.extra = f.object("extra");
  {
    // The schema's fields of extra that tables read (an RCP file took "opt_base_learning_rate": "fast" and a warmup
    // of -5 steps from them, exit 0; a hunt).
    const JsonFields extra = f.fields("extra");
    if (extra.has("peak_lr")) extra.nonneg_number("peak_lr");
    if (extra.has("warmup_steps")) extra.integer("warmup_steps", 0, kMaxCount);
    if (extra.has("stop_at")) extra.integer("stop_at", 1, kMaxCount);
  }
  r.provenance = f.object("provenance");
  // A record edited or made elsewhere that contradicts itself gave wrong table cells, not an error (found by a hunt:
  // a reversed curve changed the final accuracy, a target "reached" at an accuracy the run never had gave a time to
  // target of 0.001 s).
  check_curve(r.curve, r.global_batch, r.target_accuracy, r.time_to_accuracy, "/curve", "/time_to_accuracy");
  // The time to accuracy is at the run's own target (one at another target gave the table a time, and --rcps epochs,
  // to a target the run was not set; found by a hunt), and a run that stopped at its target reached it.
  const Json* eval = r.config.contains("eval") ? &r.config["eval"] : nullptr;
  if (eval && eval->is_object() && eval->contains("target_accuracy") && (*eval)["target_accuracy"].is_number() &&
      (*eval)["target_accuracy"].get<double>() != r.target_accuracy)
    throw BadInput(tta.pointer("target") + ": " + config::fmt_number(r.target_accuracy) +
                   ", but /config/eval/target_accuracy is " + config::fmt_number((*eval)["target_accuracy"].get<double>()));
  if (r.status == RunStatus::reached_target && !r.time_to_accuracy)
    throw BadInput(tta.pointer("reached") + ": false, but /status is \"reached-target\"");
  // A record that contradicts itself on how it ended (found by a hunt: each flipped a claim's verdict, exit 0):
  // - a completed run evaluates at its last step (cadence.hpp), so an earlier last evaluation is a curve cut short,
  //   and its final accuracy would be another step's (asynchronous SGD's curve counts the server's updates);
  // - a run not at its target whose curve reaches it (but for a diverged run's evaluation after it diverged, which
  //   reaches nothing);
  // - a completed run short of its steps without --stop-at.
  const Json* parallel = r.config.contains("parallel") ? &r.config["parallel"] : nullptr;
  const bool async = parallel && parallel->is_object() && parallel->value("mode", std::string()) == "async";
  if (!r.curve.empty() && r.status == RunStatus::completed && !async && r.curve.back().step != r.steps)
    throw BadInput("/curve/" + std::to_string(r.curve.size() - 1) + "/step: the last evaluation is at step " +
                   std::to_string(r.curve.back().step) + ", but /steps is " + std::to_string(r.steps) +
                   ": a finished run evaluates at its last step (a curve cut short?)");
  if (!r.time_to_accuracy && r.target_accuracy > 0) {
    const size_t counted = r.curve.size() - (r.status == RunStatus::diverged && !r.curve.empty() ? 1 : 0);
    for (size_t i = 0; i < counted; ++i)
      if (r.curve[i].test_accuracy >= r.target_accuracy)
        throw BadInput(tta.pointer("reached") + ": false, but /curve/" + std::to_string(i) + " is at test accuracy " +
                       config::fmt_number(r.curve[i].test_accuracy) + ", at or above the target " +
                       config::fmt_number(r.target_accuracy));
  }
  if (r.status == RunStatus::completed && r.extra.contains("total_steps") && r.extra["total_steps"].is_number_integer() &&
      !r.extra.contains("stop_at") && r.steps != r.extra["total_steps"].get<int64_t>())
    throw BadInput("/steps: " + std::to_string(r.steps) + ", but /extra/total_steps is " +
                   r.extra["total_steps"].dump() + " and the run is \"completed\" without --stop-at (/extra/stop_at)");
  return r;
}

std::string config_difference(const Json& recorded, const Json& given) {
  Json have = recorded, want = given;
  if (have.is_object()) have.erase("output");
  if (want.is_object()) want.erase("output");
  // Keys added after records were written, at the default that does what those runs did: a record without one is
  // the same config (every committed campaign would otherwise be "made from a different config" at a rerun).
  static const std::pair<const char*, int64_t> kAddedLater[] = {{"/data/synthetic/seed", -1}, {"/eval/test_samples", 0}};
  for (const auto& [key, neutral] : kAddedLater) {
    const Json::json_pointer at(key);
    if (!have.is_object() || !want.is_object() || have.contains(at) || !want.contains(at) || want[at] != neutral) continue;
    want[at.parent_pointer()].erase(at.back());
  }
  if (have == want) return "";
  const Json patch = Json::diff(want, have);
  // A difference at the root (another kind of document) has the path "": "/" then, never "" (which says "agree").
  const std::string at = patch.empty() ? "" : patch[0].value("path", "");
  return at.empty() ? "/" : at;
}

std::filesystem::path beside_record(const std::filesystem::path& record, const std::string& extension) {
  const std::string r = record.string();
  return r.substr(0, r.size() - (record.extension() == ".json" ? 5 : 0)) + extension;
}

RecordFile read_run_record(const std::filesystem::path& path) {
  Json j;
  try {
    j = read_json_file(path.string(), "run record");  // its messages name the file
  } catch (const BadInput& e) {
    return {std::nullopt, e.what()};
  }
  try {
    return {RunRecord::from_json(j), "", false};
  } catch (const BadInput& e) {
    return {std::nullopt, path.string() + ": " + e.what(), !is_record(j)};
  }
}

}  // namespace dtbench
