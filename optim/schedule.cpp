#include "optim/schedule.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "core/error.hpp"
#include "optim/scaling.hpp"

namespace dtbench::optim {

namespace {

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(12);
  s << v;
  return s.str();
}

// Section readers: absent keys take the default; present ones must have the right type and range.
// `where` is the section's JSON pointer, e.g. "/schedule".
double number(const Json& section, const std::string& where, const char* key, double def) {
  if (!section.contains(key)) return def;
  const Json& v = section[key];
  if (!v.is_number()) throw BadInput(where + "/" + key + ": must be a number, got " + v.dump());
  return v.get<double>();
}

int64_t integer(const Json& section, const std::string& where, const char* key, int64_t def) {
  if (!section.contains(key)) return def;
  const Json& v = section[key];
  if (!v.is_number_integer()) throw BadInput(where + "/" + key + ": must be an integer, got " + v.dump());
  return v.get<int64_t>();
}

std::string text(const Json& section, const std::string& where, const char* key, const std::string& def) {
  if (!section.contains(key)) return def;
  const Json& v = section[key];
  if (!v.is_string()) throw BadInput(where + "/" + key + ": must be a string, got " + v.dump());
  return v.get<std::string>();
}

bool flag(const Json& section, const std::string& where, const char* key, bool def) {
  if (!section.contains(key)) return def;
  const Json& v = section[key];
  if (!v.is_boolean()) throw BadInput(where + "/" + key + ": must be true or false, got " + v.dump());
  return v.get<bool>();
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

// Default /optimizer/lr when the section has none: the defaults of the config documentation (which
// follow PyTorch, TensorFlow and MXNet); optimizers without a conventional default need one set.
double default_lr(const std::string& name) {
  if (name == "adam" || name == "adamw") return 0.001;
  if (name == "adamax" || name == "nadam") return 0.002;
  if (name == "adagrad" || name == "rmsprop") return 0.01;
  if (name == "adadelta") return 1.0;
  if (name == "ftrl") return 0.1;
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
}

double PlateauSchedule::decay_at(int64_t) const { return current_lr_; }

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

void PlateauSchedule::load_state(const Json& state) {
  if (!state.is_object() || !state.contains("bad_evaluations") || !state.contains("cooldown_left")) {
    throw BadInput("schedule state: not a plateau schedule state");
  }
  const double current = from_bits(state, "current_lr_bits");
  const double best = from_bits(state, "best_bits");
  current_lr_ = current;
  best_ = best;
  bad_evaluations_ = state["bad_evaluations"].get<int64_t>();
  cooldown_left_ = state["cooldown_left"].get<int64_t>();
}

// ---------------------------------------------------------------------------------------------------
// Factory

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names = {"constant", "step",   "multistep",    "exponential",
                                                 "polynomial", "cosine", "inverse_sqrt", "plateau"};
  return names;
}

double peak_lr_from_config(const Json& optimizer, const Json& lr_scaling, int64_t global_batch) {
  if (!optimizer.is_object()) throw BadInput("/optimizer: must be an object");
  const std::string opt_name = text(optimizer, "/optimizer", "name", "");
  const double reference_lr = optimizer.contains("lr") ? number(optimizer, "/optimizer", "lr", 0.0) : default_lr(opt_name);
  require(finite_positive(reference_lr), "/optimizer/lr", "a finite number > 0", reference_lr);
  const LrScaling scaling = lr_scaling_from_json(lr_scaling);
  return scale_lr(reference_lr, scaling.rule, global_batch, scaling.reference_batch);
}

std::unique_ptr<Schedule> make_schedule(const Json& optimizer, const Json& lr_scaling, const Json& schedule,
                                        const RunShape& run) {
  if (run.global_batch < 1 || run.steps_per_epoch < 1 || run.total_steps < 1) {
    throw std::invalid_argument("make_schedule: global_batch, steps_per_epoch and total_steps must be >= 1");
  }
  if (!schedule.is_object()) throw BadInput("/schedule: must be an object");
  const std::string where = "/schedule";
  const double peak = peak_lr_from_config(optimizer, lr_scaling, run.global_batch);

  const std::string name = text(schedule, where, "name", "constant");
  const auto& names = schedule_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    throw BadInput("/schedule/name: unknown schedule '" + name + "' (known: " + known + ")");
  }
  const std::string unit_text = text(schedule, where, "unit", "epoch");
  if (unit_text != "epoch" && unit_text != "step") {
    throw BadInput("/schedule/unit: must be \"epoch\" or \"step\", got \"" + unit_text + "\"");
  }
  const TimeUnit unit = unit_text == "epoch" ? TimeUnit::epoch : TimeUnit::step;
  const int64_t spe = run.steps_per_epoch;
  // The run's length in the unit: whole epochs, counting a partial last epoch.
  const int64_t run_length = unit == TimeUnit::epoch ? (run.total_steps + spe - 1) / spe : run.total_steps;

  // Warmup.
  Warmup warmup;
  const Json empty = Json::object();
  const Json& wsec = schedule.contains("warmup") ? schedule["warmup"] : empty;
  if (!wsec.is_object()) throw BadInput("/schedule/warmup: must be an object");
  const std::string wwhere = "/schedule/warmup";
  const double w_epochs = number(wsec, wwhere, "epochs", 0.0);
  const int64_t w_steps = integer(wsec, wwhere, "steps", 0);
  require(finite_nonnegative(w_epochs), "/schedule/warmup/epochs", "a finite number >= 0", w_epochs);
  require(w_steps >= 0, "/schedule/warmup/steps", "an integer >= 0", static_cast<double>(w_steps));
  if (w_epochs > 0.0 && w_steps > 0) {
    throw BadInput("/schedule/warmup/steps: set either /schedule/warmup/epochs or /schedule/warmup/steps, not both");
  }
  if (w_epochs > 0.0) {
    warmup.steps = std::llround(w_epochs * static_cast<double>(spe));
    if (warmup.steps > run.total_steps) {
      throw BadInput("/schedule/warmup/epochs: warmup of " + fmt(w_epochs) + " epochs is longer than the run (" +
                     fmt(static_cast<double>(run.total_steps) / static_cast<double>(spe)) + " epochs)");
    }
  } else if (w_steps > run.total_steps) {
    throw BadInput("/schedule/warmup/steps: warmup of " + std::to_string(w_steps) +
                   " steps is longer than the run (" + std::to_string(run.total_steps) + " steps)");
  } else {
    warmup.steps = w_steps;
  }
  warmup.start_factor = number(wsec, wwhere, "start_factor", 0.0);
  require(warmup.start_factor >= 0.0 && warmup.start_factor <= 1.0, "/schedule/warmup/start_factor", "in [0, 1]",
          warmup.start_factor);
  if (flag(wsec, wwhere, "from_reference_lr", false)) {
    // Goyal et al.: start at the unscaled reference LR. Clamped at 1: a batch below the reference has
    // a peak below the reference LR, and warmup never lowers the LR.
    const LrScaling scaling = lr_scaling_from_json(lr_scaling);
    if (scaling.rule == ScalingRule::none) {
      throw BadInput("/schedule/warmup/from_reference_lr: needs /lr_scaling/rule \"linear\" or \"sqrt\"");
    }
    if (warmup.start_factor > 0.0) {
      throw BadInput("/schedule/warmup/start_factor: cannot be combined with /schedule/warmup/from_reference_lr");
    }
    const double reference_lr = peak_lr_from_config(optimizer, Json(), run.global_batch);
    warmup.start_factor = std::min(1.0, reference_lr / peak);
  }

  if (name == "constant") return std::make_unique<ConstantSchedule>(peak, unit, spe, warmup);
  if (name == "step") {
    return std::make_unique<StepSchedule>(peak, unit, spe, warmup, integer(schedule, where, "step_size", 30),
                                          number(schedule, where, "gamma", 0.1));
  }
  if (name == "multistep") {
    std::vector<int64_t> milestones = {30, 60, 80};
    if (schedule.contains("milestones")) {
      const Json& m = schedule["milestones"];
      if (!m.is_array()) throw BadInput("/schedule/milestones: must be an array of integers");
      milestones.clear();
      for (size_t i = 0; i < m.size(); ++i) {
        if (!m[i].is_number_integer()) {
          throw BadInput("/schedule/milestones/" + std::to_string(i) + ": must be an integer, got " + m[i].dump());
        }
        milestones.push_back(m[i].get<int64_t>());
      }
    }
    return std::make_unique<MultiStepSchedule>(peak, unit, spe, warmup, std::move(milestones),
                                               number(schedule, where, "gamma", 0.1));
  }
  if (name == "exponential") {
    return std::make_unique<ExponentialSchedule>(peak, unit, spe, warmup, number(schedule, where, "gamma", 0.95));
  }
  if (name == "polynomial") {
    int64_t total = integer(schedule, where, "total", 0);
    require(total >= 0, "/schedule/total", "an integer >= 0", static_cast<double>(total));
    if (total == 0) total = run_length;
    return std::make_unique<PolynomialSchedule>(peak, unit, spe, warmup, number(schedule, where, "power", 2.0),
                                                number(schedule, where, "end_lr", 1e-4), total);
  }
  if (name == "cosine") {
    int64_t t_max = integer(schedule, where, "t_max", 0);
    require(t_max >= 0, "/schedule/t_max", "an integer >= 0", static_cast<double>(t_max));
    if (t_max == 0) t_max = run_length;
    return std::make_unique<CosineSchedule>(peak, unit, spe, warmup, t_max, number(schedule, where, "eta_min", 0.0));
  }
  if (name == "inverse_sqrt") {
    return std::make_unique<InverseSqrtSchedule>(peak, unit, spe, warmup, number(schedule, where, "beta", 1.0));
  }
  // plateau
  PlateauOptions p;
  const std::string mode = text(schedule, where, "mode", "max");
  if (mode != "max" && mode != "min") throw BadInput("/schedule/mode: must be \"max\" or \"min\", got \"" + mode + "\"");
  p.mode_max = mode == "max";
  p.factor = number(schedule, where, "factor", p.factor);
  p.patience = integer(schedule, where, "patience", p.patience);
  p.threshold = number(schedule, where, "threshold", p.threshold);
  p.cooldown = integer(schedule, where, "cooldown", p.cooldown);
  p.min_lr = number(schedule, where, "min_lr", p.min_lr);
  return std::make_unique<PlateauSchedule>(peak, unit, spe, warmup, p);
}

}  // namespace dtbench::optim
