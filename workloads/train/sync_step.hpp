// One step of synchronous (or local) SGD on this rank:
//   data -> forward -> backward (gradient buckets start their allreduces as tensors become final)
//   (with m micro-batches: m forward/backward passes over slices of the batch, gradients accumulated;
//   the allreduces start in the last backward)
//   -> wait for the allreduces, scale the sum by 1/K -> per-step consensus -> optimizer step
//   -> (local SGD) average the models every H steps.
// The per-step consensus is one small allreduce of the loss, the local gradient norm (noise scale), a
// non-finite flag and the stop signals, so every rank takes the same decision at the same step: a NaN or
// Inf anywhere throws Diverged on all ranks; a stop signal on any rank stops all of them.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/run_record.hpp"
#include "optim/schedule.hpp"
#include "workloads/train/data_parallel.hpp"
#include "workloads/train/fault_injection.hpp"
#include "workloads/train/pipeline.hpp"
#include "workloads/train/run_state.hpp"
#include "workloads/backend/train_model.hpp"
#include "workloads/train/training_data.hpp"
#include "workloads/train/world.hpp"

namespace dtbench {

// A NaN/Inf loss or gradient: every rank throws it at the same step (the consensus sees it).
struct Diverged : std::runtime_error {
  Diverged(int64_t s, const std::string& what) : std::runtime_error(what), step(s) {}
  int64_t step;
};

class SyncStep {
 public:
  SyncStep(const World& world, TrainModel& model, TrainingData& data, DataParallel& parallel,
           const optim::Schedule& schedule, long per_rank, int micro_batches, int64_t total_steps)
      : world_(world), model_(model), data_(data), par_(parallel), sched_(schedule), per_rank_(per_rank),
        micro_batches_(micro_batches), total_steps_(total_steps) {}

  // Runs step `step` and adds it to `st` (timing, loss, step count, split). Throws Diverged.
  void run(int64_t step, TrainState& st);
  // The stop signal the ranks agreed on at the last step (0 = none).
  int stop_signal() const { return stop_signal_; }
  // --inject-fault's non-finite gradient (fault_injection.hpp); null: none.
  void set_fault(const FaultInjection* fault) { fault_ = fault; }
  // Pipeline stages (pipeline.hpp): the micro-batches run through the stages in the pipeline's schedule; null:
  // none.
  void set_pipeline(Pipeline* pipeline) { pipeline_ = pipeline; }

 private:
  void make_batch(int64_t step);
  void start_running_statistics();
  void average_running_statistics(int micro);
  // gpu: the next step's batch is staged during this step's backward; whole batches only, so not with
  // micro-batches.
  bool staging() const { return micro_batches_ == 1 && model_.stages_batches(); }
  void trace_ready(size_t offset);  // --trace: a gradient tensor became final in the last backward

  const World& world_;
  const FaultInjection* fault_ = nullptr;
  Pipeline* pipeline_ = nullptr;
  TrainModel& model_;
  TrainingData& data_;
  DataParallel& par_;
  const optim::Schedule& sched_;
  long per_rank_;
  int micro_batches_;
  int64_t total_steps_;
  int64_t staged_step_ = -1;  // gpu: the step whose batch is already staged on the device
  int stop_signal_ = 0;
  std::vector<float> step_statistics_;  // batch norm's running statistics where the step started
  std::vector<double> statistics_sum_;  // their sum over the step's micro-batches so far
  // --trace: parameter offset -> layer group, and the backward group being traced.
  std::map<size_t, std::string> groups_;
  std::string trace_group_;
  double trace_group_start_ = 0, trace_last_ready_ = 0;
};

}  // namespace dtbench
