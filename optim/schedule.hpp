// Learning-rate schedules: a decay curve, times a linear warmup factor, from a peak LR.
//
//     lr(step) = warmup(step) * decay(t(step))
//
// step counts optimizer updates from 0 (the first update uses lr(0)). t is the schedule's time in its
// unit: with unit "step", t = step; with unit "epoch", t = floor(step / steps_per_epoch), i.e. the LR
// holds for a whole epoch, as with PyTorch schedulers stepped once per epoch (the reference vectors in
// optim/reference use the same convention).
//
// Warmup is always per step (Goyal et al. 2017: "we increase the learning rate by a constant amount at
// every iteration"), whatever the unit: over W steps the factor rises linearly from start_factor to 1,
//     warmup(step) = start_factor + (1 - start_factor) * min(step, W) / W,
// and multiplies the decay curve, which starts at t = 0 as if there were no warmup (so step decays stay
// at their configured epochs, e.g. Goyal's 30/60/80). This is what PyTorch gives when a LinearLR and a
// decay scheduler drive the same optimizer (ChainedScheduler, or one stepped per iteration and one per
// epoch). Goyal's "from eta to k eta" is start_factor = 1/k (from_reference_lr); "from 0" is 0.
//
// Decay curves (eta = the peak LR, T = the length in the unit, 0 = the run's length):
//   constant      eta
//   step          eta * gamma^floor(t / step_size)
//   multistep     eta * gamma^(number of milestones <= t)
//   exponential   eta * gamma^t
//   polynomial    (eta - end_lr) * (1 - min(t, T) / T)^power + end_lr   (TensorFlow polynomial_decay, as
//                 MLPerf's LARS rules use it; PyTorch's PolynomialLR is the case end_lr = 0)
//   cosine        eta_min + (eta - eta_min) * (1 + cos(pi min(t, T) / T)) / 2   (held at eta_min after T)
//   inverse_sqrt  eta / sqrt(beta + t)   (the seeds' alpha / sqrt(beta + t) with alpha = eta)
//   plateau       eta, multiplied by factor whenever the evaluation metric passed to observe() has not
//                 improved for more than `patience` evaluations (PyTorch ReduceLROnPlateau, relative
//                 threshold, with its cooldown and min_lr); the trainer passes the result /schedule/metric
//                 names (test or validation accuracy with mode max, or loss with mode min)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config_spec.hpp"
#include "core/json.hpp"
#include "core/run_record.hpp"

namespace dtbench::optim {

enum class TimeUnit { epoch, step };

struct Warmup {
  int64_t steps = 0;          // length in optimizer steps; 0 = no warmup
  double start_factor = 0.0;  // LR at step 0 as a fraction of the decayed LR, in [0, 1]
};

class Schedule {
 public:
  Schedule(std::string name, double peak_lr, TimeUnit unit, int64_t steps_per_epoch, Warmup warmup);
  virtual ~Schedule() = default;

  const std::string& name() const { return name_; }
  double peak_lr() const { return peak_lr_; }
  TimeUnit unit() const { return unit_; }
  const Warmup& warmup() const { return warmup_; }

  // The learning rate for update number `step` (0-based, >= 0).
  double lr(int64_t step) const;
  double warmup_factor(int64_t step) const;
  // The schedule's time for a step: whole epochs or steps.
  int64_t time_of(int64_t step) const;

  // An evaluation result (plateau); the other schedules ignore it.
  virtual void observe(double metric) { (void)metric; }
  // An evaluation: plateau observes the result its /schedule/metric names (the config rules checked it exists).
  virtual void observe(const EvalPoint& evaluation) { (void)evaluation; }
  // Mutable state (only plateau has any), exactly: doubles are stored as their bit patterns.
  virtual Json save_state() const { return Json::object(); }
  // A checkpoint's: BadInput unless it is what save_state writes ({} for a schedule without state).
  virtual void load_state(const Json& state);

 protected:
  // The decay curve at time t (in the unit).
  virtual double decay_at(int64_t t) const = 0;

 private:
  std::string name_;
  double peak_lr_;
  TimeUnit unit_;
  int64_t steps_per_epoch_;
  Warmup warmup_;
};

class ConstantSchedule final : public Schedule {
 public:
  ConstantSchedule(double peak_lr, TimeUnit unit, int64_t steps_per_epoch, Warmup warmup);

 protected:
  double decay_at(int64_t t) const override;
};

class StepSchedule final : public Schedule {
 public:
  StepSchedule(double peak_lr, TimeUnit unit, int64_t steps_per_epoch, Warmup warmup, int64_t step_size,
               double gamma);

 protected:
  double decay_at(int64_t t) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

class MultiStepSchedule final : public Schedule {
 public:
  MultiStepSchedule(double peak_lr, TimeUnit unit, int64_t steps_per_epoch, Warmup warmup,
                    std::vector<int64_t> milestones, double gamma);

 protected:
  double decay_at(int64_t t) const override;

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

class ExponentialSchedule final : public Schedule {
 public:
  ExponentialSchedule(double peak_lr, TimeUnit unit, int64_t steps_per_epoch, Warmup warmup, double gamma);

 protected:
  double decay_at(int64_t t) const override;

 private:
  double gamma_;
};

class PolynomialSchedule final : public Schedule {
 public:
  PolynomialSchedule(double peak_lr, TimeUnit unit, int64_t steps_per_epoch, Warmup warmup, double power,
                     double end_lr, int64_t total);

 protected:
  double decay_at(int64_t t) const override;

 private:
  double power_;
  double end_lr_;
  int64_t total_;
};

class CosineSchedule final : public Schedule {
 public:
  CosineSchedule(double peak_lr, TimeUnit unit, int64_t steps_per_epoch, Warmup warmup, int64_t t_max,
                 double eta_min);

 protected:
  double decay_at(int64_t t) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

class InverseSqrtSchedule final : public Schedule {
 public:
  InverseSqrtSchedule(double peak_lr, TimeUnit unit, int64_t steps_per_epoch, Warmup warmup, double beta);

 protected:
  double decay_at(int64_t t) const override;

 private:
  double beta_;
};

struct PlateauOptions {
  // The evaluation result watched (/schedule/metric), a field of EvalPoint.
  enum class Metric { test_accuracy, test_loss, validation_accuracy, validation_loss } metric = Metric::test_accuracy;
  bool mode_max = true;  // "max": higher metric is better (accuracy); "min": lower is better (loss)
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;  // relative
  int64_t cooldown = 0;
  double min_lr = 0.0;
};

class PlateauSchedule final : public Schedule {
 public:
  PlateauSchedule(double peak_lr, TimeUnit unit, int64_t steps_per_epoch, Warmup warmup, PlateauOptions options);
  void observe(double metric) override;
  void observe(const EvalPoint& evaluation) override;
  Json save_state() const override;
  void load_state(const Json& state) override;
  // The plateau's current LR before warmup (peak_lr() times the reductions so far).
  double current_lr() const { return current_lr_; }

 protected:
  double decay_at(int64_t t) const override;

 private:
  PlateauOptions options_;
  double current_lr_;
  double best_;
  int64_t bad_evaluations_ = 0;
  int64_t cooldown_left_ = 0;
};

// The run a schedule is built for.
struct RunShape {
  int64_t global_batch = 1;     // samples per update over all ranks
  int64_t steps_per_epoch = 1;  // updates per epoch
  int64_t total_steps = 1;      // updates in the run
  // A run of unknown length (`dtbench config` checks a config before any data says how long an epoch is): as long
  // as any, for the checks against the run's length.
  static constexpr int64_t kUnknownLength = int64_t{1} << 60;
};

// What every schedule is built from besides its own keys.
struct ScheduleStart {
  double peak = 0.0;  // the peak LR (scaled to the global batch)
  TimeUnit unit = TimeUnit::epoch;
  int64_t steps_per_epoch = 1;
  Warmup warmup;
  int64_t run_length = 1;  // the run's length in the unit (the default of lengths given as 0)
};

class SectionReader;  // section_reader.hpp

// The schedule registry: each schedule is one entry (its name, the config keys it adds to the common
// "unit" and "warmup", and its factory). The "/schedule" schema section and the name list come from it.
struct ScheduleEntry {
  std::string name;
  config::Fields fields;
  std::unique_ptr<Schedule> (*make)(const SectionReader& section, const ScheduleStart& start);
};
const std::vector<ScheduleEntry>& schedule_registry();
const config::Node& schedule_schema();
const std::vector<std::string>& schedule_names();

// The peak LR: "/optimizer/lr" (the reference LR when a scaling rule is set) scaled to the global batch.
double peak_lr_from_config(const Json& optimizer, const Json& lr_scaling, int64_t global_batch);

// Builds the schedule from the resolved "/optimizer", "/lr_scaling" and "/schedule" sections and the
// run's shape. Throws BadInput naming the key (a JSON pointer) for unknown names, values out of range
// and things that need the run's length (a warmup longer than the run).
std::unique_ptr<Schedule> make_schedule(const Json& optimizer, const Json& lr_scaling, const Json& schedule,
                                        const RunShape& run);

}  // namespace dtbench::optim
