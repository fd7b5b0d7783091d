#include "optim/schedule.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "core/error.hpp"
#include "core/mlperf.hpp"
#include "optim/registry.hpp"
#include "optim/scaling.hpp"
#include "optim/section_reader.hpp"

namespace dtbench::optim {

namespace {

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(12);
  s << v;
  return s.str();
}

void require(bool ok, const std::string& key, const std::string& what, double got) {
  if (!ok) throw BadInput(key + ": must be " + what + ", got " + fmt(got));
}

// "must be in (0, 1]" and friends; written so that NaN fails every check.
bool in_open_closed_unit(double v) { return v > 0.0 && v <= 1.0; }
bool finite_nonnegative(double v) { return v >= 0.0 && std::isfinite(v); }
bool finite_positive(double v) { return v > 0.0 && std::isfinite(v); }

uint64_t bits(double v) { return std::bit_cast<uint64_t>(v); }
double from_bits(const Json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number_unsigned()) throw BadInput(std::string("schedule state: missing ") + key);
  return std::bit_cast<double>(j[key].get<uint64_t>());
}

// Default /optimizer/lr when the section has none: the optimizer's own default in the registry (those
// follow PyTorch, TensorFlow and MXNet); optimizers without a conventional default need one set (the
// common default of 0.1 is the resolved config's, not a convention).
double default_lr(const std::string& name) {
  if (const OptimizerEntry* e = find_optimizer(name))
    for (const auto& [key, node] : e->fields)
      if (key == "lr") return node.def.get<double>();
  throw BadInput("/optimizer/lr: missing (optimizer '" + name + "' has no default learning rate)");
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Schedule (warmup and time)

Schedule::Schedule(std::string name, double peak_lr, TimeUnit unit, int64_t steps_per_epoch, Warmup warmup)
    : name_(std::move(name)), peak_lr_(peak_lr), unit_(unit), steps_per_epoch_(steps_per_epoch), warmup_(warmup) {
  if (steps_per_epoch_ < 1) throw std::invalid_argument("Schedule: steps_per_epoch must be >= 1");
  require(finite_positive(peak_lr_), "/optimizer/lr", "a finite number > 0 after scaling", peak_lr_);
  require(warmup_.steps >= 0, "/schedule/warmup/steps", "an integer >= 0", static_cast<double>(warmup_.steps));
  require(warmup_.start_factor >= 0.0 && warmup_.start_factor <= 1.0, "/schedule/warmup/start_factor",
          "in [0, 1]", warmup_.start_factor);
}

int64_t Schedule::time_of(int64_t step) const {
  return unit_ == TimeUnit::epoch ? step / steps_per_epoch_ : step;
}

double Schedule::warmup_factor(int64_t step) const {
  if (step >= warmup_.steps) return 1.0;
  const double s = warmup_.start_factor;
  return s + (1.0 - s) * static_cast<double>(step) / static_cast<double>(warmup_.steps);
}

double Schedule::lr(int64_t step) const {
  if (step < 0) throw std::invalid_argument("Schedule::lr: negative step " + std::to_string(step));
  return warmup_factor(step) * decay_at(time_of(step));
}

// ---------------------------------------------------------------------------------------------------
// Decay curves

ConstantSchedule::ConstantSchedule(double peak_lr, TimeUnit unit, int64_t spe, Warmup warmup)
    : Schedule("constant", peak_lr, unit, spe, warmup) {}

double ConstantSchedule::decay_at(int64_t) const { return peak_lr(); }

StepSchedule::StepSchedule(double peak_lr, TimeUnit unit, int64_t spe, Warmup warmup, int64_t step_size, double gamma)
    : Schedule("step", peak_lr, unit, spe, warmup), step_size_(step_size), gamma_(gamma) {
  require(step_size_ >= 1, "/schedule/step_size", "an integer >= 1", static_cast<double>(step_size_));
  require(in_open_closed_unit(gamma_), "/schedule/gamma", "in (0, 1]", gamma_);
}

double StepSchedule::decay_at(int64_t t) const {
  return peak_lr() * std::pow(gamma_, static_cast<double>(t / step_size_));
}

MultiStepSchedule::MultiStepSchedule(double peak_lr, TimeUnit unit, int64_t spe, Warmup warmup,
                                     std::vector<int64_t> milestones, double gamma)
    : Schedule("multistep", peak_lr, unit, spe, warmup), milestones_(std::move(milestones)), gamma_(gamma) {
  require(in_open_closed_unit(gamma_), "/schedule/gamma", "in (0, 1]", gamma_);
  for (size_t i = 0; i < milestones_.size(); ++i) {
    const std::string key = "/schedule/milestones/" + std::to_string(i);
    require(milestones_[i] >= 1, key, "an integer >= 1", static_cast<double>(milestones_[i]));
    if (i > 0 && milestones_[i] <= milestones_[i - 1]) {
      throw BadInput(key + ": milestones must increase, got " + std::to_string(milestones_[i]) + " after " +
                     std::to_string(milestones_[i - 1]));
    }
  }
}

double MultiStepSchedule::decay_at(int64_t t) const {
  const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), t) - milestones_.begin();
  return peak_lr() * std::pow(gamma_, static_cast<double>(passed));
}

ExponentialSchedule::ExponentialSchedule(double peak_lr, TimeUnit unit, int64_t spe, Warmup warmup, double gamma)
    : Schedule("exponential", peak_lr, unit, spe, warmup), gamma_(gamma) {
  require(in_open_closed_unit(gamma_), "/schedule/gamma", "in (0, 1]", gamma_);
}

double ExponentialSchedule::decay_at(int64_t t) const { return peak_lr() * std::pow(gamma_, static_cast<double>(t)); }

PolynomialSchedule::PolynomialSchedule(double peak_lr, TimeUnit unit, int64_t spe, Warmup warmup, double power,
                                       double end_lr, int64_t total)
    : Schedule("polynomial", peak_lr, unit, spe, warmup), power_(power), end_lr_(end_lr), total_(total) {
  require(finite_positive(power_), "/schedule/power", "a finite number > 0", power_);
  require(finite_nonnegative(end_lr_), "/schedule/end_lr", "a finite number >= 0", end_lr_);
  if (end_lr_ > peak_lr) {
    throw BadInput("/schedule/end_lr: " + fmt(end_lr_) + " is above the peak learning rate " + fmt(peak_lr));
  }
  require(total_ >= 1, "/schedule/total", "an integer >= 1 (0 = the run's length)", static_cast<double>(total_));
}

double PolynomialSchedule::decay_at(int64_t t) const {
  const double frac = static_cast<double>(std::min(t, total_)) / static_cast<double>(total_);
  return (peak_lr() - end_lr_) * std::pow(1.0 - frac, power_) + end_lr_;
}

CosineSchedule::CosineSchedule(double peak_lr, TimeUnit unit, int64_t spe, Warmup warmup, int64_t t_max,
                               double eta_min)
    : Schedule("cosine", peak_lr, unit, spe, warmup), t_max_(t_max), eta_min_(eta_min) {
  require(t_max_ >= 1, "/schedule/t_max", "an integer >= 1 (0 = the run's length)", static_cast<double>(t_max_));
  require(finite_nonnegative(eta_min_), "/schedule/eta_min", "a finite number >= 0", eta_min_);
  if (eta_min_ > peak_lr) {
    throw BadInput("/schedule/eta_min: " + fmt(eta_min_) + " is above the peak learning rate " + fmt(peak_lr));
  }
}

double CosineSchedule::decay_at(int64_t t) const {
  const double frac = static_cast<double>(std::min(t, t_max_)) / static_cast<double>(t_max_);
  return eta_min_ + (peak_lr() - eta_min_) * (1.0 + std::cos(M_PI * frac)) / 2.0;
}

InverseSqrtSchedule::InverseSqrtSchedule(double peak_lr, TimeUnit unit, int64_t spe, Warmup warmup, double beta)
    : Schedule("inverse_sqrt", peak_lr, unit, spe, warmup), beta_(beta) {
  require(finite_positive(beta_), "/schedule/beta", "a finite number > 0", beta_);
}

double InverseSqrtSchedule::decay_at(int64_t t) const {
  return peak_lr() / std::sqrt(beta_ + static_cast<double>(t));
}

PlateauSchedule::PlateauSchedule(double peak_lr, TimeUnit unit, int64_t spe, Warmup warmup, PlateauOptions options)
    : Schedule("plateau", peak_lr, unit, spe, warmup),
      options_(options),
      current_lr_(peak_lr),
      best_(options.mode_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity()) {
  require(options_.factor > 0.0 && options_.factor < 1.0, "/schedule/factor", "in (0, 1)", options_.factor);
  require(options_.patience >= 0, "/schedule/patience", "an integer >= 0", static_cast<double>(options_.patience));
  require(finite_nonnegative(options_.threshold), "/schedule/threshold", "a finite number >= 0", options_.threshold);
  require(options_.cooldown >= 0, "/schedule/cooldown", "an integer >= 0", static_cast<double>(options_.cooldown));
  require(finite_nonnegative(options_.min_lr), "/schedule/min_lr", "a finite number >= 0", options_.min_lr);
  // As eta_min and end_lr (found by a hunt: accepted, and the schedule then never cut the rate).
  if (options_.min_lr > peak_lr) {
    throw BadInput("/schedule/min_lr: " + fmt(options_.min_lr) + " is above the peak learning rate " + fmt(peak_lr));
  }
}

double PlateauSchedule::decay_at(int64_t) const { return current_lr_; }

void PlateauSchedule::observe(const EvalPoint& e) {
  using M = PlateauOptions::Metric;
  switch (options_.metric) {
    case M::test_accuracy: return observe(e.test_accuracy);
    case M::test_loss: return observe(e.test_loss);
    case M::validation_accuracy: return observe(e.validation_accuracy.value());
    case M::validation_loss: return observe(e.validation_loss.value());
  }
}

// torch.optim.lr_scheduler.ReduceLROnPlateau.step with threshold_mode "rel" and eps 1e-8. A NaN metric
// compares false, so it counts as no improvement (as in PyTorch).
void PlateauSchedule::observe(double metric) {
  const bool better = options_.mode_max ? metric > best_ * (1.0 + options_.threshold)
                                        : metric < best_ * (1.0 - options_.threshold);
  if (better) {
    best_ = metric;
    bad_evaluations_ = 0;
  } else {
    ++bad_evaluations_;
  }
  if (cooldown_left_ > 0) {
    --cooldown_left_;
    bad_evaluations_ = 0;  // bad evaluations during cooldown do not count
  }
  if (bad_evaluations_ > options_.patience) {
    const double reduced = std::max(current_lr_ * options_.factor, options_.min_lr);
    if (current_lr_ - reduced > 1e-8) current_lr_ = reduced;
    cooldown_left_ = options_.cooldown;
    bad_evaluations_ = 0;
  }
}

Json PlateauSchedule::save_state() const {
  Json j;
  j["current_lr_bits"] = bits(current_lr_);
  j["best_bits"] = bits(best_);
  j["bad_evaluations"] = bad_evaluations_;
  j["cooldown_left"] = cooldown_left_;
  return j;
}

void Schedule::load_state(const Json& state) {
  if (state != Json::object())
    throw BadInput("schedule state: expected {} (this schedule keeps no state), got " + state.dump().substr(0, 60));
}

void PlateauSchedule::load_state(const Json& state) {
  const auto count = [&](const char* key) {
    return state.contains(key) && state[key].is_number_integer() && state[key].get<int64_t>() >= 0;
  };
  if (!state.is_object() || state.size() != 4 || !count("bad_evaluations") || !count("cooldown_left"))
    throw BadInput("schedule state: not a plateau schedule state (current_lr_bits, best_bits, and bad_evaluations and "
                   "cooldown_left as counts)");
  const double current = from_bits(state, "current_lr_bits");
  const double best = from_bits(state, "best_bits");
  if (!std::isfinite(current) || current < 0)
    throw BadInput("schedule state: current_lr_bits is not a learning rate (" + std::to_string(current) + ")");
  current_lr_ = current;
  best_ = best;
  bad_evaluations_ = state["bad_evaluations"].get<int64_t>();
  cooldown_left_ = state["cooldown_left"].get<int64_t>();
}

// ---------------------------------------------------------------------------------------------------
// Registry and factory

namespace {

config::Node warmup_node() {
  using namespace config;
  return object({{"epochs", nonneg(0, "linear warmup length in epochs")},
                 {"steps", integer(0, 0, inf, "linear warmup length in steps")},
                 {"start_factor", number(0, 0, 1, false, false, "LR at t=0 as a fraction of the peak")},
                 {"from_reference_lr",
                  boolean(false, "start at the unscaled reference LR (Goyal et al. gradual warmup)")}});
}

config::Fields common_fields() {
  return {
      {"unit", config::text("epoch", {"epoch", "step"}, "what the schedule's t counts")},
      {"warmup", warmup_node()},
  };
}

std::vector<int64_t> milestones(const SectionReader& in) {
  const Json& m = in.value("milestones");
  if (!m.is_array()) throw BadInput("/schedule/milestones: must be an array of integers");
  std::vector<int64_t> out;
  for (size_t i = 0; i < m.size(); ++i) {
    if (!m[i].is_number_integer()) {
      throw BadInput("/schedule/milestones/" + std::to_string(i) + ": must be an integer, got " + m[i].dump());
    }
    out.push_back(m[i].get<int64_t>());
  }
  return out;
}

// A length in the schedule's unit where 0 means the run's length.
int64_t length_or_run(const SectionReader& in, const char* key, const ScheduleStart& at) {
  const int64_t v = in.integer(key);
  require(v >= 0, "/schedule/" + std::string(key), "an integer >= 0", static_cast<double>(v));
  return v == 0 ? at.run_length : v;
}

std::vector<ScheduleEntry> build_registry() {
  using config::integer;
  using config::nonneg;
  using config::number;
  using config::positive;
  return {
      {"constant", {}, [](const SectionReader&, const ScheduleStart& at) -> std::unique_ptr<Schedule> {
         return std::make_unique<ConstantSchedule>(at.peak, at.unit, at.steps_per_epoch, at.warmup);
       }},
      {"step", {{"step_size", integer(30, 1)}, {"gamma", number(0.1, 0, 1, true)}},
       [](const SectionReader& in, const ScheduleStart& at) -> std::unique_ptr<Schedule> {
         return std::make_unique<StepSchedule>(at.peak, at.unit, at.steps_per_epoch, at.warmup, in.integer("step_size"),
                                               in.number("gamma"));
       }},
      {"multistep", {{"milestones", config::integers({30, 60, 80})}, {"gamma", number(0.1, 0, 1, true)}},
       [](const SectionReader& in, const ScheduleStart& at) -> std::unique_ptr<Schedule> {
         return std::make_unique<MultiStepSchedule>(at.peak, at.unit, at.steps_per_epoch, at.warmup, milestones(in),
                                                    in.number("gamma"));
       }},
      {"exponential", {{"gamma", number(0.95, 0, 1, true)}},
       [](const SectionReader& in, const ScheduleStart& at) -> std::unique_ptr<Schedule> {
         return std::make_unique<ExponentialSchedule>(at.peak, at.unit, at.steps_per_epoch, at.warmup,
                                                      in.number("gamma"));
       }},
      {"polynomial",
       {{"power", positive(2.0)}, {"end_lr", nonneg(1e-4)},
        {"total", integer(0, 0, config::inf, "decay length; 0 = the run's length")}},
       [](const SectionReader& in, const ScheduleStart& at) -> std::unique_ptr<Schedule> {
         const int64_t total = length_or_run(in, "total", at);
         return std::make_unique<PolynomialSchedule>(at.peak, at.unit, at.steps_per_epoch, at.warmup, in.number("power"),
                                                     in.number("end_lr"), total);
       }},
      {"cosine", {{"t_max", integer(0, 0, config::inf, "0 = the run's length")}, {"eta_min", nonneg(0)}},
       [](const SectionReader& in, const ScheduleStart& at) -> std::unique_ptr<Schedule> {
         const int64_t t_max = length_or_run(in, "t_max", at);
         return std::make_unique<CosineSchedule>(at.peak, at.unit, at.steps_per_epoch, at.warmup, t_max,
                                                 in.number("eta_min"));
       }},
      {"inverse_sqrt", {{"beta", positive(1.0, "lr = alpha / sqrt(beta + t), alpha = /optimizer/lr")}},
       [](const SectionReader& in, const ScheduleStart& at) -> std::unique_ptr<Schedule> {
         return std::make_unique<InverseSqrtSchedule>(at.peak, at.unit, at.steps_per_epoch, at.warmup,
                                                      in.number("beta"));
       }},
      {"plateau",
       {{"metric", config::text("test_accuracy", {"test_accuracy", "test_loss", "validation_accuracy", "validation_loss"},
                                "the evaluation result watched (validation_* needs /data/validation_size)")},
        {"mode", config::text("auto", {"auto", "max", "min"}, "auto: max for an accuracy, min for a loss")},
        {"factor", number(0.1, 0, 1, true, true)},
        {"patience", integer(10, 0)}, {"threshold", nonneg(1e-4)}, {"cooldown", integer(0, 0)},
        {"min_lr", nonneg(0)}},
       [](const SectionReader& in, const ScheduleStart& at) -> std::unique_ptr<Schedule> {
         PlateauOptions p;
         const std::string mode = in.text("mode");
         if (mode != "auto" && mode != "max" && mode != "min") {
           throw BadInput("/schedule/mode: must be \"auto\", \"max\" or \"min\", got \"" + mode + "\"");
         }
         const std::string metric = in.text("metric");
         using M = PlateauOptions::Metric;
         p.metric = metric == "test_loss"             ? M::test_loss
                    : metric == "validation_accuracy" ? M::validation_accuracy
                    : metric == "validation_loss"     ? M::validation_loss
                                                      : M::test_accuracy;
         p.mode_max = mode == "auto" ? !metric.ends_with("_loss") : mode == "max";
         p.factor = in.number("factor");
         p.patience = in.integer("patience");
         p.threshold = in.number("threshold");
         p.cooldown = in.integer("cooldown");
         p.min_lr = in.number("min_lr");
         return std::make_unique<PlateauSchedule>(at.peak, at.unit, at.steps_per_epoch, at.warmup, p);
       }},
  };
}

// The warmup of the "/schedule/warmup" section for a run of `run` with peak LR `peak`.
Warmup read_warmup(const Json& warmup, const Json& optimizer, const Json& lr_scaling, const RunShape& run,
                   double peak) {
  if (!warmup.is_object()) throw BadInput("/schedule/warmup: must be an object");
  const SectionReader in(warmup, "/schedule/warmup", warmup_node().fields);
  const int64_t spe = run.steps_per_epoch;
  Warmup out;
  const double w_epochs = in.number("epochs");
  const int64_t w_steps = in.integer("steps");
  require(finite_nonnegative(w_epochs), "/schedule/warmup/epochs", "a finite number >= 0", w_epochs);
  require(w_steps >= 0, "/schedule/warmup/steps", "an integer >= 0", static_cast<double>(w_steps));
  if (w_epochs > 0.0 && w_steps > 0) {
    throw BadInput("/schedule/warmup/steps: set either /schedule/warmup/epochs or /schedule/warmup/steps, not both");
  }
  if (w_epochs > 0.0) {
    // Compared as a double first: llround of a count beyond int64 (1e300 epochs) is undefined.
    const double steps = w_epochs * static_cast<double>(spe);
    out.steps = steps <= static_cast<double>(run.total_steps) ? warmup_steps_of_epochs(w_epochs, spe) : run.total_steps + 1;
    if (out.steps > run.total_steps) {
      throw BadInput("/schedule/warmup/epochs: warmup of " + fmt(w_epochs) + " epochs is longer than " +
                     (run.total_steps == RunShape::kUnknownLength
                          ? "any run can be (2^60 steps)"
                          : "the run (" + fmt(static_cast<double>(run.total_steps) / static_cast<double>(spe)) +
                                " epochs)"));
    }
  } else if (w_steps > run.total_steps) {
    throw BadInput("/schedule/warmup/steps: warmup of " + std::to_string(w_steps) + " steps is longer than " +
                   (run.total_steps == RunShape::kUnknownLength
                        ? std::string("any run can be (2^60 steps)")
                        : "the run (" + std::to_string(run.total_steps) + " steps)"));
  } else {
    out.steps = w_steps;
  }
  out.start_factor = in.number("start_factor");
  require(out.start_factor >= 0.0 && out.start_factor <= 1.0, "/schedule/warmup/start_factor", "in [0, 1]",
          out.start_factor);
  if (in.flag("from_reference_lr")) {
    // Goyal et al.: start at the unscaled reference LR. Clamped at 1: a batch below the reference has
    // a peak below the reference LR, and warmup never lowers the LR.
    const LrScaling scaling = lr_scaling_from_json(lr_scaling);
    if (scaling.rule == ScalingRule::none) {
      throw BadInput("/schedule/warmup/from_reference_lr: needs /lr_scaling/rule \"linear\" or \"sqrt\"");
    }
    if (out.start_factor > 0.0) {
      throw BadInput("/schedule/warmup/start_factor: cannot be combined with /schedule/warmup/from_reference_lr");
    }
    const double reference_lr = peak_lr_from_config(optimizer, Json(), run.global_batch);
    out.start_factor = std::min(1.0, reference_lr / peak);
  }
  return out;
}

}  // namespace

const std::vector<ScheduleEntry>& schedule_registry() {
  static const std::vector<ScheduleEntry> entries = build_registry();
  return entries;
}

const config::Node& schedule_schema() {
  static const config::Node node = [] {
    config::Variants variants;
    for (const ScheduleEntry& e : schedule_registry()) variants.emplace_back(e.name, e.fields);
    return config::variant("name", "constant", common_fields(), std::move(variants), "learning-rate schedule");
  }();
  return node;
}

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names = config::variant_names(schedule_schema());
  return names;
}

double peak_lr_from_config(const Json& optimizer, const Json& lr_scaling, int64_t global_batch) {
  if (!optimizer.is_object()) throw BadInput("/optimizer: must be an object");
  if (optimizer.contains("name") && !optimizer["name"].is_string()) {
    throw BadInput("/optimizer/name: must be a string, got " + optimizer["name"].dump());
  }
  const std::string opt_name = optimizer.value("name", "");
  double reference_lr = 0;
  if (!optimizer.contains("lr")) reference_lr = default_lr(opt_name);
  else if (optimizer["lr"].is_number()) reference_lr = optimizer["lr"].get<double>();
  else throw BadInput("/optimizer/lr: must be a number, got " + optimizer["lr"].dump());
  require(finite_positive(reference_lr), "/optimizer/lr", "a finite number > 0", reference_lr);
  const LrScaling scaling = lr_scaling_from_json(lr_scaling);
  const double peak = scale_lr(reference_lr, scaling.rule, global_batch, scaling.reference_batch);
  // The optimizers compute in float32, whose range /optimizer/lr itself is checked against: a peak that the scaling
  // takes past it would be infinite (the run diverges at its first step) or flushed to 0 (it trains nothing; both
  // ran, exit 0; a hunt).
  const float as_float = static_cast<float>(peak);
  if (std::isinf(as_float) || std::fabs(as_float) < std::numeric_limits<float>::min())
    throw BadInput("/optimizer/lr: " + fmt(reference_lr) + " scaled by /lr_scaling (rule \"" +
                   std::string(to_string(scaling.rule)) + "\", global batch " + std::to_string(global_batch) +
                   " over reference batch " + std::to_string(scaling.reference_batch) + ") is a peak learning rate of " +
                   fmt(peak) + ", " +
                   (std::isinf(as_float) ? std::string("beyond float32's range (it would be infinite)")
                                         : std::string("nearer 0 than the smallest normal float32 (1.2e-38), so it acts as 0")));
  return peak;
}

std::unique_ptr<Schedule> make_schedule(const Json& optimizer, const Json& lr_scaling, const Json& schedule,
                                        const RunShape& run) {
  if (run.global_batch < 1 || run.steps_per_epoch < 1 || run.total_steps < 1) {
    throw std::invalid_argument("make_schedule: global_batch, steps_per_epoch and total_steps must be >= 1");
  }
  if (!schedule.is_object()) throw BadInput("/schedule: must be an object");
  const double peak = peak_lr_from_config(optimizer, lr_scaling, run.global_batch);

  if (schedule.contains("name") && !schedule["name"].is_string()) {
    throw BadInput("/schedule/name: must be a string, got " + schedule["name"].dump());
  }
  const std::string name = schedule.value("name", schedule_schema().def.get<std::string>());
  const auto& entries = schedule_registry();
  auto entry = std::find_if(entries.begin(), entries.end(), [&](const ScheduleEntry& e) { return e.name == name; });
  if (entry == entries.end()) {
    std::string known;
    for (const std::string& n : schedule_names()) known += (known.empty() ? "" : ", ") + n;
    throw BadInput("/schedule/name: unknown schedule '" + name + "' (known: " + known + ")");
  }
  config::Fields storage;
  const SectionReader in(schedule, "/schedule", *config::variant_fields(schedule_schema(), name, storage));
  const std::string unit_text = in.text("unit");
  if (unit_text != "epoch" && unit_text != "step") {
    throw BadInput("/schedule/unit: must be \"epoch\" or \"step\", got \"" + unit_text + "\"");
  }
  ScheduleStart at;
  at.peak = peak;
  at.unit = unit_text == "epoch" ? TimeUnit::epoch : TimeUnit::step;
  at.steps_per_epoch = run.steps_per_epoch;
  // The run's length in the unit: whole epochs, counting a partial last epoch.
  at.run_length = at.unit == TimeUnit::epoch ? (run.total_steps + run.steps_per_epoch - 1) / run.steps_per_epoch
                                             : run.total_steps;
  at.warmup = read_warmup(schedule.contains("warmup") ? schedule["warmup"] : Json::object(), optimizer, lr_scaling,
                          run, peak);
  return entry->make(in, at);
}

}  // namespace dtbench::optim
