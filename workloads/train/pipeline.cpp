#include "workloads/train/pipeline.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/error.hpp"
#include "core/timer.hpp"
#include "core/trace.hpp"
#include "core/linear_partition.hpp"

namespace dtbench {

namespace {

// One tag per direction: a stage sends its micro-batches' activations (and gradients) in micro-batch order and its
// neighbour receives them in that order, and a Comm delivers the messages of one sender and tag in the order they
// were sent, so the micro-batch needs no tag of its own.
constexpr int kForwardTag = 0, kBackwardTag = 1, kEvalTag = 2;

}  // namespace

std::vector<PipelineOp> pipeline_schedule(const std::string& schedule, int stages, int stage, int micro_batches) {
  if (stages < 1 || stage < 0 || stage >= stages || micro_batches < 1)
    throw std::logic_error("pipeline_schedule: stage " + std::to_string(stage) + " of " + std::to_string(stages) +
                           " with " + std::to_string(micro_batches) + " micro-batches");
  std::vector<PipelineOp> ops;
  if (schedule == "gpipe") {
    for (int j = 0; j < micro_batches; ++j) ops.push_back({true, j});
    for (int j = 0; j < micro_batches; ++j) ops.push_back({false, j});
    return ops;
  }
  if (schedule != "1f1b") throw std::logic_error("pipeline_schedule: unknown schedule " + schedule);
  const int warmup = std::min(stages - stage - 1, micro_batches);
  for (int j = 0; j < warmup; ++j) ops.push_back({true, j});
  for (int j = 0; j + warmup < micro_batches; ++j) {
    ops.push_back({true, j + warmup});
    ops.push_back({false, j});
  }
  for (int j = micro_batches - warmup; j < micro_batches; ++j) ops.push_back({false, j});
  return ops;
}

int pipeline_slots(const std::string& schedule, int stages, int stage, int micro_batches) {
  return schedule == "gpipe" ? micro_batches : std::min(stages - stage, micro_batches);
}

double ideal_bubble_fraction(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

std::pair<int, int> stage_units(const std::vector<double>& unit_costs, int stages, int stage) {
  const std::vector<int> of = linear_partition(unit_costs, stages);
  const auto first = std::find(of.begin(), of.end(), stage);
  const auto end = std::find_if(first, of.end(), [stage](int s) { return s != stage; });
  return {static_cast<int>(first - of.begin()), static_cast<int>(end - of.begin())};
}

Pipeline::Pipeline(const ModelParallel& layout, std::string schedule, int micro_batches)
    : layout_(layout),
      comm_(layout.group_comm()),
      schedule_(std::move(schedule)),
      micro_batches_(micro_batches),
      ops_(pipeline_schedule(schedule_, layout.group_size(), layout.shard(), micro_batches)),
      slots_(pipeline_slots(schedule_, layout.group_size(), layout.shard(), micro_batches)),
      pending_(static_cast<size_t>(slots_)) {
  if (layout.form() != ModelParallel::Form::pipeline) throw std::logic_error("Pipeline: not a pipeline layout");
}

void Pipeline::wait_slot(int slot) {
  for (SendRequest& r : pending_[static_cast<size_t>(slot)]) comm_.wait(r);
  pending_[static_cast<size_t>(slot)].clear();
}

void Pipeline::receive(std::vector<float>& into, int from, int tag, double& waited) {
  Stopwatch w;
  comm_.recv(from, into.data(), into.size() * sizeof(float), tag);
  waited += w.seconds();
}

void Pipeline::send(const float* data, size_t floats, int to, int tag, int slot) {
  pending_[static_cast<size_t>(slot)].push_back(comm_.isend(to, data, floats * sizeof(float), tag));
}

double Pipeline::train(TrainModel& model, const float* x, const int32_t* labels, size_t sample_floats, int n,
                       const models::BatchPosition& at, const Hooks& hooks, StepSeconds& sec) {
  const int S = stages(), s = stage(), M = micro_batches_, slots = slots_;
  const size_t in_floats = model.stage_input_floats(n), out_floats = model.stage_output_floats(n);
  const uint64_t sent_before = comm_.traffic().sent_bytes;
  double loss = 0;
  const bool tracing = trace::on();
  for (const PipelineOp& op : ops_) {
    const int slot = op.micro % slots;
    // --trace: each micro-batch's forward and backward, from the wait for its tensor to the end of its compute
    // (spans "forward" and "backward" with the micro-batch in their args; the wait inside them is the bubble).
    const double traced_from = tracing ? trace::now_us() : 0;
    const size_t first = static_cast<size_t>(op.micro) * static_cast<size_t>(n);
    model.set_slot(slot);
    if (op.forward) {
      Stopwatch w;
      wait_slot(slot);  // the slot's previous sends read the memories this forward rewrites
      sec.forward_wait += w.seconds();
      const float* in = x + first * sample_floats;
      if (s > 0) {
        received_.resize(in_floats);
        receive(received_, s - 1, kForwardTag, sec.forward_wait);
        in = received_.data();
      }
      Stopwatch c;
      model.set_batch_position({at.step, at.first_sample + first});
      loss += model.forward(in, labels + first, n, true);
      if (hooks.after_forward) hooks.after_forward(op.micro);
      sec.forward += c.seconds();
      if (s < S - 1) {
        send(model.stage_output(), out_floats, s + 1, kForwardTag, slot);
      }
      if (tracing)
        trace::span("forward", "step", trace::kTrainingTrack, traced_from, trace::now_us(), {{"micro_batch", op.micro}});
    } else {
      if (s < S - 1) {
        received_.resize(out_floats);
        receive(received_, s + 1, kBackwardTag, sec.backward_wait);
        model.set_output_gradient(received_.data());
      }
      Stopwatch c;
      if (op.micro == M - 1) {  // both schedules run the backwards in micro-batch order: this one is the last
        if (hooks.before_last_backward) hooks.before_last_backward();
        model.backward(hooks.last_ready);
      } else {
        model.backward(models::OnReady{});
        model.accumulate_grads(op.micro == 0);
      }
      sec.backward += c.seconds();
      if (s > 0) {
        send(model.input_gradient(), in_floats, s - 1, kBackwardTag, slot);
      }
      if (tracing)
        trace::span("backward", "step", trace::kTrainingTrack, traced_from, trace::now_us(), {{"micro_batch", op.micro}});
    }
  }
  Stopwatch w;
  for (int k = 0; k < slots; ++k) wait_slot(k);
  sec.backward_wait += w.seconds();
  compute_ += sec.forward + sec.backward;
  wait_ += sec.forward_wait + sec.backward_wait;
  bytes_sent_ += static_cast<double>(comm_.traffic().sent_bytes - sent_before);  // the waited sends: all of them
  ++steps_;
  return loss;
}

double Pipeline::evaluate(TrainModel& model, const float* x, const int32_t* labels, int n) {
  const int S = stages(), s = stage();
  model.set_slot(0);
  const float* in = x;
  if (s > 0) {
    received_.resize(model.stage_input_floats(n));
    double waited = 0;
    receive(received_, s - 1, kEvalTag, waited);
    in = received_.data();
  }
  const double loss = model.forward(in, labels, n, false);
  if (s < S - 1) comm_.send(s + 1, model.stage_output(), model.stage_output_floats(n) * sizeof(float), kEvalTag);
  return loss;
}

Json Pipeline::record(const World& world, const std::vector<double>& unit_seconds,
                      const std::vector<std::pair<int, int>>& units, size_t params_per_rank, size_t params_whole,
                      size_t activation_bytes) const {
  // Per rank: computing and waiting seconds, bytes sent, parameters, activation bytes, gathered on rank 0, which
  // writes the record.
  const double mine[5] = {compute_, wait_, bytes_sent_, static_cast<double>(params_per_rank),
                          static_cast<double>(activation_bytes)};
  const std::vector<double> all = world.gather(mine);
  if (!world.root()) return nullptr;
  const int size = world.size();
  const int S = stages();
  const double per_step = steps_ > 0 ? 1.0 / static_cast<double>(steps_) : 0.0;
  Json stages_json = Json::array();
  double bubble_sum = 0;
  // A replica's pipeline spans, each step, the longest of its stages' forwards, backwards and waits (the stages
  // end at different times: the last stage does not wait for the first one's last backward). A stage's bubble is
  // the part of that span it does not compute.
  auto span_of_replica = [&](int replica) {
    double most = 0;
    for (int st = 0; st < S; ++st) {
      const size_t r = size_t(replica * S + st);
      most = std::max(most, all[5 * r] + all[5 * r + 1]);
    }
    return most;
  };
  for (int st = 0; st < S; ++st) {
    // Stage st of every replica (world ranks st, st + S, ...): their mean.
    double compute = 0, wait = 0, bytes = 0, params = 0, act = 0, bubble = 0;
    int count = 0;
    for (int r = st; r < size; r += S, ++count) {
      compute += all[5 * size_t(r)], wait += all[5 * size_t(r) + 1], bytes += all[5 * size_t(r) + 2];
      params = all[5 * size_t(r) + 3], act = std::max(act, all[5 * size_t(r) + 4]);
      const double span = span_of_replica(r / S);
      bubble += span > 0 ? 1.0 - all[5 * size_t(r)] / span : 0.0;
    }
    bubble /= count;
    bubble_sum += bubble;
    stages_json.push_back({{"stage", st},
                           {"first_unit", units[size_t(st)].first},
                           {"end_unit", units[size_t(st)].second},
                           {"parameters", params},
                           {"activation_bytes", act},
                           {"compute_seconds_per_step", compute / count * per_step},
                           {"wait_seconds_per_step", wait / count * per_step},
                           {"bytes_sent_per_step", bytes / count * per_step},
                           {"bubble_fraction", bubble}});
  }
  return {{"stages", S},
          {"schedule", schedule_},
          {"micro_batches", micro_batches_},
          {"replicas", layout_.replicas()},
          {"layout", "rank k is stage k mod stages of replica k / stages"},
          {"unit_seconds_measured", unit_seconds},
          {"parameters_per_rank", params_per_rank},
          {"parameters_whole_model", params_whole},
          {"bubble_fraction_measured", bubble_sum / S},
          {"bubble_fraction_ideal", ideal_bubble_fraction(S, micro_batches_)},
          {"per_stage", stages_json},
          {"note", "bubble_fraction: the part of its pipeline's span (the longest of the replica's stages' "
                   "seconds in the steps' forwards, backwards and waits for the neighbours' tensors) that a stage "
                   "does not compute, averaged over the replicas, then over the stages; ideal: (S - 1) / (M + S - 1) for equal stages and free "
                   "communication (GPipe); unit_seconds_measured: each unit's forward and backward seconds for one "
                   "micro-batch, from which the stages were cut; parameters_per_rank: rank 0's"}};
}

}  // namespace dtbench
