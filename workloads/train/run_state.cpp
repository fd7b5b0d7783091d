#include "workloads/train/run_state.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/checkpoint_files.hpp"

namespace dtbench {
namespace {

Json timing_json(const StepTiming& t) {
  return {{"data", t.data},   {"forward", t.forward},     {"backward", t.backward}, {"exposed_comm", t.exposed_comm},
          {"comm", t.comm},   {"optimizer", t.optimizer}, {"total", t.total}};
}


}  // namespace

void TrainState::add_step(const StepTiming& t, double loss) {
  sum.data += t.data, sum.forward += t.forward, sum.backward += t.backward;
  sum.exposed_comm += t.exposed_comm, sum.comm += t.comm, sum.optimizer += t.optimizer;
  sum.total += t.total;
  timed_steps++;
  if (attempt_stepped) {
    steady_total += t.total;
    steady_steps++;
  }
  attempt_stepped = true;
  train_loss_sum += loss;
  train_loss_steps++;
}

double TrainState::images_per_second(int64_t global_batch) const {
  return sum.total > 0 ? static_cast<double>(global_batch * timed_steps) / sum.total : 0.0;
}

std::optional<double> TrainState::steady_images_per_second(int64_t global_batch) const {
  if (steady_steps == 0 || steady_total <= 0) return std::nullopt;
  return static_cast<double>(global_batch * steady_steps) / steady_total;
}

Json TrainState::to_json() const {
  Json c = Json::array();
  for (const auto& p : curve) c.push_back(dtbench::to_json(p));
  Json t = tta ? Json{{"seconds", tta->seconds}, {"step", tta->step}, {"epoch", tta->epoch}, {"samples", tta->samples}}
               : Json(nullptr);
  return {{"step", step},
          {"elapsed", elapsed},
          {"inherited_elapsed", inherited_elapsed},
          {"sum", timing_json(sum)},
          {"timed_steps", timed_steps},
          {"steady", {{"total", steady_total}, {"steps", steady_steps}}},
          {"train_loss_sum", train_loss_sum},
          {"train_loss_steps", train_loss_steps},
          {"curve", c},
          {"tta", t},
          {"preemptions", preemptions},
          {"noise", noise},
          {"split", {{"wait_slowest", wait_slowest}, {"after_last", after_last}, {"steps", split_steps}}},
          {"curvature", {{"exchanges", curvature_exchanges}, {"bytes", curvature_bytes}}},
          {"pipeline_unit_seconds", pipeline_unit_seconds},
          {"mllog_bytes", mllog_bytes},
          {"mllog_from_point", mllog_from_point},
          {"mllog_timed_run_end_ms", mllog_timed_run_end_ms}};
}

void TrainState::retarget(double target) {
  tta.reset();
  if (target <= 0) return;
  for (const EvalPoint& p : curve)
    if (p.test_accuracy >= target) {
      tta = TimeToAccuracy{p.wall_seconds, p.step, p.epoch, p.samples};
      return;
    }
}

namespace {

// The fields of one object of the checkpoint's run state, read with their JSON pointers in every message: a header
// is plain text anyone can edit (its CRC catches damage, not an edit whose CRC was recomputed), and what it holds
// goes into the record.
class StateFields : public JsonFields {
 public:
  StateFields(const Json& j, std::string at) : JsonFields(j, std::move(at)) {}
  // A whole number in [0, 2^62]: steps, counts, bytes.
  int64_t count(const char* key) const {
    const Json& v = at(key);
    const bool whole = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
    if (!whole || v.get<uint64_t>() > (uint64_t{1} << 62))
      throw BadInput(pointer(key) + ": expected a whole number in [0, 2^62], got " + v.dump().substr(0, 40));
    return v.get<int64_t>();
  }
  // Seconds or another figure >= 0 the record reports: finite and below 10^12.
  double amount(const char* key) const {
    const Json& v = at(key);
    if (!v.is_number() || !(v.get<double>() >= 0) || v.get<double>() > 1e12)
      throw BadInput(pointer(key) + ": expected a number in [0, 1e12], got " + v.dump().substr(0, 40));
    return v.get<double>();
  }
  double finite(const char* key) const {
    const Json& v = at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      throw BadInput(pointer(key) + ": expected a finite number, got " + v.dump().substr(0, 40));
    return v.get<double>();
  }
  StateFields object(const char* key) const { return StateFields(at(key), pointer(key)); }
};

}  // namespace

TrainState TrainState::from_json(const Json& j) {
  try {
    const StateFields f(j, "/state");
    TrainState s;
    s.step = f.count("step");
    s.elapsed = f.amount("elapsed");
    const StateFields sum = f.object("sum");
    s.sum = {sum.amount("data"), sum.amount("forward"), sum.amount("backward"), sum.amount("exposed_comm"),
             sum.amount("comm"), sum.amount("optimizer"), sum.amount("total")};
    s.timed_steps = f.count("timed_steps");
    s.train_loss_sum = f.finite("train_loss_sum");
    s.train_loss_steps = f.count("train_loss_steps");
    const Json& curve = f.at("curve");
    if (!curve.is_array()) throw BadInput("/state/curve: expected a list of evaluations");
    for (size_t i = 0; i < curve.size(); ++i)
      s.curve.push_back(eval_point_from_json(curve[i], "/state/curve/" + std::to_string(i)));
    if (!f.at("tta").is_null()) {
      const StateFields t = f.object("tta");
      s.tta = TimeToAccuracy{t.amount("seconds"), t.count("step"), t.amount("epoch"), t.count("samples")};
    }
    s.preemptions = f.at("preemptions");
    s.noise = f.at("noise");
    const StateFields split = f.object("split");
    s.wait_slowest = split.amount("wait_slowest");
    s.after_last = split.amount("after_last");
    s.split_steps = split.count("steps");
    if (f.has("pipeline_unit_seconds")) {  // checkpoints before pipeline stages have none
      const Json& units = f.at("pipeline_unit_seconds");
      if (!units.is_array()) throw BadInput("/state/pipeline_unit_seconds: expected a list of seconds");
      for (size_t i = 0; i < units.size(); ++i) {
        if (!units[i].is_number() || !(units[i].get<double>() >= 0) || units[i].get<double>() > 1e12)
          throw BadInput("/state/pipeline_unit_seconds/" + std::to_string(i) + ": expected seconds in [0, 1e12]");
        s.pipeline_unit_seconds.push_back(units[i].get<double>());
      }
    }
    // Not in older checkpoints: -1 (unknown) is what a checkpoint of a run without an MLLOG file (rank 0's) has.
    if (f.has("mllog_bytes") && f.at("mllog_bytes") != -1) s.mllog_bytes = f.count("mllog_bytes");
    if (f.has("mllog_from_point")) s.mllog_from_point = f.count("mllog_from_point");
    if (f.has("inherited_elapsed")) s.inherited_elapsed = f.amount("inherited_elapsed");  // not in older checkpoints
    if (f.has("mllog_timed_run_end_ms") && f.at("mllog_timed_run_end_ms") != -1)
      s.mllog_timed_run_end_ms = f.count("mllog_timed_run_end_ms");
    if (f.has("steady")) {  // checkpoints from before it have none: its sums then start at this attempt
      const StateFields steady = f.object("steady");
      s.steady_total = steady.amount("total");
      s.steady_steps = steady.count("steps");
    }
    if (f.has("curvature")) {  // checkpoints before K-FAC have none
      const StateFields c = f.object("curvature");
      s.curvature_exchanges = c.count("exchanges");
      s.curvature_bytes = c.nonneg_number("bytes");  // a running total: no bound
    }
    // Counts that must agree with the step the run is at. The curve and its time to accuracy go into the record:
    // an edited point ahead of the run, or out of order, gave a record that reached its target at step 100 of 8.
    for (size_t i = 0; i < s.curve.size(); ++i) {
      const EvalPoint& p = s.curve[i];
      const std::string at = "/state/curve/" + std::to_string(i);
      if (p.step > s.step)
        throw BadInput(at + "/step: " + std::to_string(p.step) + " is more than /state/step (" + std::to_string(s.step) +
                       ")");
      if (i == 0) continue;
      const EvalPoint& q = s.curve[i - 1];
      if (p.step < q.step || p.samples < q.samples || p.epoch < q.epoch || p.wall_seconds < q.wall_seconds)
        throw BadInput(at + ": an evaluation before the one at " + "/state/curve/" + std::to_string(i - 1) +
                       " (its step, samples, epoch or wall_seconds is less)");
    }
    if (s.tta && std::none_of(s.curve.begin(), s.curve.end(), [&](const EvalPoint& p) {
          return TimeToAccuracy{p.wall_seconds, p.step, p.epoch, p.samples} == *s.tta;
        }))
      throw BadInput("/state/tta: no point of /state/curve has its step, samples, epoch and seconds (a target is "
                     "reached at an evaluation)");
    // MLPerf's timed run ends at the first evaluation at the target (trainer.cpp): a time without a reached target
    // was taken (found by a hunt: 1 put the log's run_stop before its run_start and dropped every later event).
    if (s.mllog_timed_run_end_ms >= 0 && !s.tta)
      throw BadInput("/state/mllog_timed_run_end_ms: " + std::to_string(s.mllog_timed_run_end_ms) +
                     ", but /state/tta is null: the timed run ends only when the target is reached");
    if (s.mllog_bytes == 0)
      throw BadInput("/state/mllog_bytes: 0, but a run's MLLOG file holds its first events before any checkpoint "
                     "(a resumed run would cut them all)");
    if (s.mllog_from_point > static_cast<int64_t>(s.curve.size()))
      throw BadInput("/state/mllog_from_point: " + std::to_string(s.mllog_from_point) + " is more than the curve's " +
                     std::to_string(s.curve.size()) + " points");
    for (const auto& [key, v] : {std::pair{"timed_steps", s.timed_steps}, {"train_loss_steps", s.train_loss_steps},
                                 {"split/steps", s.split_steps}})
      if (v > s.step)
        throw BadInput(std::string("/state/") + key + ": " + std::to_string(v) + " is more than /state/step (" +
                       std::to_string(s.step) + ")");
    if (s.steady_steps > s.timed_steps)
      throw BadInput("/state/steady/steps: " + std::to_string(s.steady_steps) + " is more than /state/timed_steps (" +
                     std::to_string(s.timed_steps) + ")");
    // The preemptions go into the record as they are: each as the trainer writes it (found by a hunt: a signal
    // "abc" at step -5 was the new record's), at steps in order up to this one.
    if (!s.preemptions.is_array()) throw BadInput("/state/preemptions: expected a list of objects");
    int64_t before = 0;
    for (size_t i = 0; i < s.preemptions.size(); ++i) {
      const StateFields p(s.preemptions[i], "/state/preemptions/" + std::to_string(i));
      p.only({"signal", "at_step", "utc", "resumed_utc", "checkpoint_written_by", "threads_changed", "nodes_changed"});
      p.integer("signal", 1, 64);
      const int64_t at_step = p.count("at_step");
      if (at_step < before || at_step > s.step)
        throw BadInput(p.pointer("at_step") + ": " + std::to_string(at_step) + " is not in [" + std::to_string(before) +
                       ", " + std::to_string(s.step) + "] (the earlier preemption's step to /state/step)");
      before = at_step;
      for (const char* key : {"utc", "resumed_utc", "checkpoint_written_by"})
        if (key == std::string("utc") || p.has(key)) p.string(key);
      if (p.has("threads_changed")) {
        const StateFields t = p.object("threads_changed");
        t.only({"checkpointed", "resumed"});
        check_thread_counts(t.at("checkpointed"), t.pointer("checkpointed"));
        check_thread_counts(t.at("resumed"), t.pointer("resumed"));
      }
      if (p.has("nodes_changed")) {
        const StateFields n = p.object("nodes_changed");
        n.only({"checkpointed", "resumed"});
        check_node_layout(n.at("checkpointed"), n.pointer("checkpointed"), 0);
        check_node_layout(n.at("resumed"), n.pointer("resumed"), static_cast<int64_t>(n.at("checkpointed").size()));
      }
    }
    // The noise scale's state: none yet ({}), or what NoiseScaleEstimator::save_state writes.
    if (!s.noise.is_object()) throw BadInput("/state/noise: expected an object");
    if (!s.noise.empty()) {
      StateFields(s.noise, "/state/noise").only({"g2", "trace", "weight"});
      for (const char* key : {"g2", "trace", "weight"})
        if (!s.noise.contains(key) || !(s.noise[key].is_number() || s.noise[key].is_null()))  // null: NaN written
          throw BadInput(std::string("/state/noise/") + key + ": expected a number");
    }
    return s;
  } catch (const BadInput& e) {
    throw BadInput(std::string("checkpoint header: ") + e.what());
  } catch (const Json::exception& e) {
    throw BadInput(std::string("checkpoint header: run state is damaged or from another dtbench version (") +
                   e.what() + ")");
  }
}

}  // namespace dtbench
