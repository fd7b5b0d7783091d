#include "workloads/train/run_state.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace dtbench {
namespace {

Json timing_json(const StepTiming& t) {
  return {{"data", t.data},   {"forward", t.forward},     {"backward", t.backward}, {"exposed_comm", t.exposed_comm},
          {"comm", t.comm},   {"optimizer", t.optimizer}, {"total", t.total}};
}

StepTiming timing_from(const Json& j) {
  return {j.at("data"), j.at("forward"), j.at("backward"), j.at("exposed_comm"),
          j.at("comm"), j.at("optimizer"), j.at("total")};
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
          {"mllog_from_step", mllog_from_step}};
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

TrainState TrainState::from_json(const Json& j) {
  try {
    TrainState s;
    s.step = j.at("step");
    s.elapsed = j.at("elapsed");
    s.sum = timing_from(j.at("sum"));
    s.timed_steps = j.at("timed_steps");
    s.train_loss_sum = j.at("train_loss_sum");
    s.train_loss_steps = j.at("train_loss_steps");
    for (const auto& p : j.at("curve")) s.curve.push_back(eval_point_from_json(p, "/state/curve"));
    if (const Json& t = j.at("tta"); !t.is_null())
      s.tta = TimeToAccuracy{t.at("seconds"), t.at("step"), t.at("epoch"), t.at("samples")};
    s.preemptions = j.at("preemptions");
    s.noise = j.at("noise");
    const Json& split = j.at("split");
    s.wait_slowest = split.at("wait_slowest");
    s.after_last = split.at("after_last");
    s.split_steps = split.at("steps");
    if (j.contains("pipeline_unit_seconds"))  // checkpoints before pipeline stages have none
      s.pipeline_unit_seconds = j["pipeline_unit_seconds"].get<std::vector<double>>();
    if (j.contains("mllog_bytes")) s.mllog_bytes = j["mllog_bytes"].get<int64_t>();  // not in older checkpoints
    if (j.contains("mllog_from_step")) s.mllog_from_step = j["mllog_from_step"].get<int64_t>();
    if (j.contains("steady")) {  // checkpoints from before it have none: its sums then start at this attempt
      s.steady_total = j["steady"].at("total");
      s.steady_steps = j["steady"].at("steps");
    }
    if (j.contains("curvature")) {  // checkpoints before K-FAC have none
      s.curvature_exchanges = j["curvature"].at("exchanges");
      s.curvature_bytes = j["curvature"].at("bytes");
    }
    // What the record and the next steps take as counts and times may not be negative or of another shape.
    const auto at_least_0 = [](const char* key, double v) {
      if (!(v >= 0)) throw BadInput(std::string("/state/") + key + ": expected a number >= 0, got " + std::to_string(v));
    };
    at_least_0("step", static_cast<double>(s.step));
    at_least_0("elapsed", s.elapsed);
    at_least_0("timed_steps", static_cast<double>(s.timed_steps));
    at_least_0("train_loss_steps", static_cast<double>(s.train_loss_steps));
    if (s.mllog_from_step < 0 || s.mllog_from_step > s.step)
      throw BadInput("/state/mllog_from_step: expected a step from 0 to /state/step (" + std::to_string(s.step) +
                     "), got " + std::to_string(s.mllog_from_step));
    if (!s.preemptions.is_array() || !std::all_of(s.preemptions.begin(), s.preemptions.end(),
                                                   [](const Json& p) { return p.is_object(); }))
      throw BadInput("/state/preemptions: expected a list of objects");
    if (!s.noise.is_null()) {
      if (!s.noise.is_object()) throw BadInput("/state/noise: expected an object");
      if (s.noise.contains("g2"))
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
