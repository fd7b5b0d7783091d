// Pipeline parallelism's schedules and exchanges: the second form of model parallelism (the first is
// workloads/cpu/split_layer.hpp), in the 2-D layout of model_parallel.hpp (a replica's S consecutive ranks hold
// its S stages; rank k is stage k mod S). The activations and their gradients travel on a Comm
// (reducers/comm.hpp: isend, recv, counted), like the reducers' traffic.
//
// Terms. The network is cut into S stages of consecutive pipeline units (workloads/models/pipeline_units.hpp),
// balanced by measured cost: each unit's forward and backward seconds for one micro-batch, measured on the whole
// model before the run, and the cut that makes the costliest stage cheapest (models::segment_of_units). A step's
// batch (the replica's) is split into M micro-batches of n images; stage s receives micro-batch j's activations
// from stage s - 1, runs its forward, sends its output to stage s + 1; the backward runs the other way. A
// stage's gradients are summed over the micro-batches (the step is the whole batch's, as gradient accumulation)
// and then averaged over the replicas by the reducer on the ranks that hold the same stage.
//
// Schedules (each stage's order of forward F_j and backward B_j):
//   - GPipe (Huang et al. 2019, arXiv 1811.06965): F_0 ... F_{M-1}, then B_0 ... B_{M-1}. Every micro-batch's
//     activations are held at the end of the forwards: M in flight.
//   - 1F1B (PipeDream-Flush; Narayanan et al. 2021, "Memory-Efficient Pipeline-Parallel DNN Training", arXiv
//     2006.09503): stage s runs w = min(S - s - 1, M) forwards, then alternates F_{j+w}, B_j, then the last w
//     backwards: at most S - s micro-batches in flight, the same bubble.
// Both run the backwards in micro-batch order, so the gradient sums, and the weights, are the same bits.
// The bubble: with equal stages of forward f and backward b per micro-batch, a step takes (M + S - 1)(f + b),
// of which each stage computes M (f + b): its idle fraction is (S - 1) / (M + S - 1) (GPipe, section 2.2). The
// record measures it as the part of the pipeline's span (its longest stage's forwards, backwards and waits) that a
// stage does not compute; unequal stages add their imbalance to it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "reducers/mpi_comm.hpp"
#include "workloads/backend/train_model.hpp"
#include "workloads/models/hooks.hpp"
#include "workloads/train/model_parallel.hpp"
#include "workloads/train/world.hpp"

namespace dtbench {

struct PipelineOp {
  bool forward = true;
  int micro = 0;
  bool operator==(const PipelineOp&) const = default;
};

// Stage `stage`'s operations in one step, in order; schedule "gpipe" or "1f1b".
std::vector<PipelineOp> pipeline_schedule(const std::string& schedule, int stages, int stage, int micro_batches);
// Micro-batches stage `stage` holds at once: the plans (slots) it needs.
int pipeline_slots(const std::string& schedule, int stages, int stage, int micro_batches);
// (S - 1) / (M + S - 1): the idle fraction of each stage with equal stages and free communication.
double ideal_bubble_fraction(int stages, int micro_batches);
// The stage of each unit when units with these costs are cut into `stages` stages (the cut of smallest
// largest-stage cost), as [first_unit, end_unit) of stage `stage`.
std::pair<int, int> stage_units(const std::vector<double>& unit_costs, int stages, int stage);

class Pipeline {
 public:
  // layout: the pipeline form of ModelParallel (rank = stage within its group). Collective over the group: the
  // stages' tensors travel on a Comm of their own, a duplicate of the group's communicator.
  Pipeline(const ModelParallel& layout, std::string schedule, int micro_batches);

  struct Hooks {
    std::function<void(int micro)> after_forward;  // after micro-batch j's forward
    std::function<void()> before_last_backward;    // before the step's last backward (the buckets begin)
    models::OnReady last_ready;                    // the last backward's gradient announcements
  };
  struct StepSeconds {
    double forward = 0, backward = 0;            // computing
    double forward_wait = 0, backward_wait = 0;  // waiting for the neighbours' tensors (and the sends to finish)
  };
  // One training step of this rank's stage over the replica's batch of M x n images (x: images, labels), in the
  // schedule's order. Gradients: summed over the micro-batches, the last backward's ranges finished by
  // hooks.last_ready. Returns the summed micro-batch losses on the last stage (0 elsewhere). `at`: the step and
  // the replica's first sample in its global batch; micro-batch j's forward sits at at.first_sample + j n.
  double train(TrainModel& model, const float* x, const int32_t* labels, size_t sample_floats, int n,
               const models::BatchPosition& at, const Hooks& hooks, StepSeconds& seconds);
  // An evaluation forward of n images through the stages: the loss on the last stage (0 elsewhere; its
  // TrainModel::correct() counts), the others' correct() is 0.
  double evaluate(TrainModel& model, const float* x, const int32_t* labels, int n);

  int stages() const { return layout_.group_size(); }
  int stage() const { return layout_.shard(); }
  bool last() const { return stage() == stages() - 1; }

  // extra.pipeline of the record on rank 0, null elsewhere (collective over the world: every stage's bubble and
  // exchanges are gathered); unit_seconds: the measured unit costs the cut was made from, units: [first, end) of every stage.
  Json record(const World& world, const std::vector<double>& unit_seconds, const std::vector<std::pair<int, int>>& units,
              size_t params_per_rank, size_t params_whole, size_t activation_bytes) const;

 private:
  void wait_slot(int slot);
  void receive(std::vector<float>& into, int from, int tag, double& waited);
  void send(const float* data, size_t floats, int to, int tag, int slot);

  const ModelParallel& layout_;
  MpiComm comm_;  // the group's stages; its counters give the bytes sent
  std::string schedule_;
  int micro_batches_;
  std::vector<PipelineOp> ops_;                     // this stage's schedule, the same every step
  int slots_;                                       // micro-batches this stage holds at once
  std::vector<std::vector<SendRequest>> pending_;  // per slot: sends that read its plan's memories
  std::vector<float> received_;                    // the tensor received last
  // Over the steps so far: computing and waiting seconds, bytes sent, steps.
  double compute_ = 0, wait_ = 0, bytes_sent_ = 0;
  int64_t steps_ = 0;
};

}  // namespace dtbench
