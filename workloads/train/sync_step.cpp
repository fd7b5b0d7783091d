#include "workloads/train/sync_step.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/timer.hpp"
#include "core/trace.hpp"
#include "optim/optimizer.hpp"
#include "workloads/train/stop_signal.hpp"

namespace dtbench {

void SyncStep::make_batch(int64_t step) {
  data_.make_train_batch(step);
  if (staging()) {
    model_.stage(data_.x(), data_.labels(), static_cast<int>(per_rank_));
    staged_step_ = step;
  }
}

// Batch norm's running statistics with micro-batches: each of K*m ranks updates its own from its own batch,
// and the model's are their mean (DataParallel::average_buffers). So every micro-batch's forward updates the
// statistics from where the step started, and the step keeps the mean of the m results (summed in double): by
// the exponential average's linearity, what the mean over those m ranks gives.
void SyncStep::start_running_statistics() {
  if (model_.buffers().empty()) return;
  const std::span<float> b = model_.host_buffers();
  step_statistics_.assign(b.begin(), b.end());
  statistics_sum_.assign(b.size(), 0.0);
}

void SyncStep::average_running_statistics(int micro) {
  if (model_.buffers().empty()) return;
  const std::span<float> b = model_.host_buffers();
  for (size_t i = 0; i < b.size(); ++i) statistics_sum_[i] += b[i];
  if (micro < micro_batches_ - 1) {
    std::copy(step_statistics_.begin(), step_statistics_.end(), b.begin());
  } else {
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(statistics_sum_[i] / micro_batches_);
  }
  model_.push_host_buffers();
}

namespace {

// The layer group of a parameter tensor, for the trace: "layer1.0.conv1.weight" -> "layer1.0" (a residual
// block), "fc.weight" -> "fc", "conv1.weight" -> "conv1".
std::string layer_group(const std::string& name) {
  const size_t first = name.find('.');
  if (first == std::string::npos) return name;
  const size_t second = name.find('.', first + 1);
  const bool block = second != std::string::npos && name.find('.', second + 1) != std::string::npos;
  return name.substr(0, block ? second : first);
}

}  // namespace

// Backward's layer groups on the trace: a group's span runs from the moment the previous group's last
// gradient became final (or backward began) to the moment its own last one did.
void SyncStep::trace_ready(size_t offset) {
  if (groups_.empty()) {
    for (const models::ParamInfo& p : model_.param_table()) groups_[p.offset] = layer_group(p.name);
  }
  const double t = trace::now_us();
  static const std::string other = "gradients";
  auto it = groups_.find(offset);
  const std::string& group = it == groups_.end() ? other : it->second;
  if (group != trace_group_ && !trace_group_.empty()) {
    trace::span(trace_group_, "backward", trace::kTrainingTrack, trace_group_start_, trace_last_ready_);
    trace_group_start_ = trace_last_ready_;
  }
  trace_group_ = group;
  trace_last_ready_ = t;
}

// Timing phases are measured on this rank; the record averages them over ranks.
void SyncStep::run(int64_t step, TrainState& st) {
  StepTiming t;
  Stopwatch total, phase;
  trace::Sequence seq(step + 1);  // the step's phases on the trace (nothing when tracing is off)
  if (!staging() || staged_step_ != step) make_batch(step);
  t.data = phase.seconds();
  seq.end("data", "step");

  GradientBuckets& buckets = par_.buckets();
  auto grads = model_.grads();
  const bool local = par_.local_step(step);
  // Gradient accumulation: micro-batch j is samples [j*n, (j+1)*n) of this rank's batch. All but the last
  // add their gradients up; the last one's gradient ranges get that sum, divided by m, as each becomes
  // final, and only then may their allreduces start (during the last backward, as without micro-batches).
  const int m = micro_batches_;
  const int n = static_cast<int>(per_rank_ / m);
  const float inv_m = 1.0f / static_cast<float>(m);
  models::OnReady last_ready;
  const bool tracing = seq.active();
  if (m > 1 || !local || tracing)
    last_ready = [&](size_t off, size_t len) {
      if (m > 1) model_.finish_accumulation(off, len, inv_m);
      if (!local) buckets.ready(off, len);
      if (tracing) trace_ready(off);
    };
  double loss = 0, last_backward = 0;
  if (m > 1) start_running_statistics();
  if (pipeline_ != nullptr) {
    // The stages' schedule; the waits for the neighbours' tensors count in the forward and backward phases.
    Pipeline::Hooks hooks;
    if (m > 1) hooks.after_forward = [this](int j) { average_running_statistics(j); };
    hooks.before_last_backward = [&] {
      if (!local) buckets.begin(grads.data());
      trace_group_.clear();
      trace_group_start_ = trace::now_us();
    };
    hooks.last_ready = last_ready;
    Pipeline::StepSeconds sec;
    loss = pipeline_->train(model_, data_.x(), data_.labels(), data_.sample_floats(), n,
                            {static_cast<uint64_t>(step), data_.batch_offset()}, hooks, sec);
    if (tracing && !trace_group_.empty())
      trace::span(trace_group_, "backward", trace::kTrainingTrack, trace_group_start_, trace_last_ready_);
    t.forward = sec.forward + sec.forward_wait;
    t.backward = sec.backward + sec.backward_wait;
    seq.end("pipeline forwards and backwards", "step");
  } else {
    for (int j = 0; j < m; ++j) {
      phase.reset();
      const size_t first = static_cast<size_t>(j) * static_cast<size_t>(n);
      model_.set_batch_position({static_cast<uint64_t>(step), data_.batch_offset() + first});
      loss += staging() ? model_.forward_staged(n)
                        : model_.forward(data_.x() + first * data_.sample_floats(), data_.labels() + first, n, true);
      if (m > 1) average_running_statistics(j);
      t.forward += phase.seconds();
      seq.end("forward", "step");

      phase.reset();
      if (j < m - 1) {
        model_.backward(models::OnReady{});
        model_.accumulate_grads(j == 0);
      } else {
        if (!local) buckets.begin(grads.data());
        trace_group_.clear();
        trace_group_start_ = seq.last();
        model_.backward(last_ready);
        if (tracing && !trace_group_.empty())
          trace::span(trace_group_, "backward", trace::kTrainingTrack, trace_group_start_, trace_last_ready_);
      }
      last_backward = phase.seconds();
      t.backward += last_backward;
      seq.end("backward", "step");
    }
  }
  loss /= m;  // the mean over the rank's batch (each micro-batch's loss is its own mean)
  double staging_seconds = 0;
  if (staging() && step + 1 < total_steps_) {
    // The device is running backward (and the allreduces): make and stage the next batch meanwhile.
    Stopwatch next;
    make_batch(step + 1);
    staging_seconds = next.seconds();
    seq.end("data (next step, staged)", "step");
    t.data += staging_seconds;  // the next step's data, made while this step's backward ran on the device
  }

  const double backward_end = now_seconds();
  double small_norm_sq = 0;
  const int ranks = world_.size(), replicas = par_.replicas();
  if (!local) {
    const double busy_before = par_.reducer().busy_seconds();
    t.exposed_comm = buckets.finish();
    seq.end("wait for allreduces", "communication");
    t.comm = par_.reducer().busy_seconds() - busy_before;
    if (par_.noise())
      small_norm_sq = model_.host_memory() ? buckets.local_norm_sq() : model_.slots_norm_sq(buckets.count());
    if (replicas > 1) model_.scale(grads, 1.0f / static_cast<float>(replicas));
    // The tensors every rank of a model-parallel group holds whole got the same gradient on each, but each
    // shard's replicas averaged them in buckets of their own shapes, so in another order: rank 0 of the group's
    // copy makes them equal again, and so the weights stay equal.
    if (const ModelParallel* mp = par_.model_parallel()) mp->share_whole_gradients(grads, model_.param_table());
    const int shard = par_.model_parallel() ? par_.model_parallel()->shard() : 0;
    if (fault_ && fault_->poisons_gradient(step + 1, shard)) grads[0] = std::numeric_limits<float>::quiet_NaN();
  } else if (fault_ && fault_->poisons_gradient(step + 1, world_.rank())) {
    grads[0] = std::numeric_limits<float>::quiet_NaN();  // a local step: the rank's own gradient, averaged with none
  }
  // gpu: backward() only enqueued. The device's own backward time replaces the host's enqueue time. Of
  // the host's window from the enqueue to the end of the allreduces (enqueue, staging, wait), the part
  // after both the device's backward and the host's staging had ended is exposed communication. (With
  // micro-batches, the earlier backwards finish on the device while the next forward waits for its loss:
  // the forward column holds that part.)
  if (double device = model_.last_backward_device_seconds(); device >= 0) {
    if (!local) {
      const double window = last_backward + staging_seconds + t.exposed_comm;
      t.exposed_comm = std::max(0.0, window - std::max(device, last_backward + staging_seconds));
    }
    t.backward = (t.backward - last_backward) + device;
  }

  // Per-step consensus: summed loss, summed local gradient norms, non-finite count, ranks that got a
  // stop signal and the sum of their signal numbers (so every rank learns which signal it was).
  const int sig = received_stop_signal();
  double agree[5] = {loss, small_norm_sq, std::isfinite(loss) ? 0.0 : 1.0, sig ? 1.0 : 0.0, static_cast<double>(sig)};
  world_.sum(agree);
  seq.end("consensus", "communication");
  if (agree[2] > 0)
    throw Diverged(step, "loss became NaN or Inf at step " + std::to_string(step + 1) + " (on " +
                             std::to_string(static_cast<int>(agree[2])) + " of " + std::to_string(ranks) + " ranks)");

  // K-FAC: the Kronecker factors this rank's backward took, averaged across ranks like the gradients.
  if (std::span<float> f = model_.curvature_statistics(); !f.empty() && !local && ranks > 1) {
    Stopwatch exchange;
    par_.reducer().allreduce(f.data(), f.size());
    for (float& v : f) v /= static_cast<float>(ranks);
    t.comm += exchange.seconds();
    t.exposed_comm += exchange.seconds();
    st.curvature_exchanges++;
    st.curvature_bytes += static_cast<double>(f.size_bytes());
    seq.end("K-FAC factors allreduce", "communication");
  }

  auto& noise = par_.noise();
  if (noise && !local) noise->observe(agree[1] / ranks, model_.grads_norm_sq());

  phase.reset();
  // The optimizer refuses a non-finite gradient before any write. Without model parallelism every rank holds the
  // same averaged gradient and refuses alike; with it, only the ranks of the shard whose rows overflowed would,
  // and in a local SGD phase (no averaging) only the rank whose own gradient overflowed, leaving the others waiting
  // in the next exchange: they agree on it (one small sum, no pass over the gradient), and all stop.
  const bool alike = par_.model_parallel() == nullptr && !local;
  std::string refused;
  try {
    if (model_.step_allowed()) model_.optimizer_step(sched_.lr(step));
  } catch (const optim::NonFiniteGradient& e) {
    refused = e.detail();  // what follows the optimizer's own "at step N" (the same step: said once)
    if (alike) throw Diverged(step, "gradient became non-finite at step " + std::to_string(step + 1) + ": " + refused);
  }
  if (local && par_.model_parallel() == nullptr) {
    double ranks_refused[1] = {refused.empty() ? 0.0 : 1.0};
    world_.sum(ranks_refused);
    if (ranks_refused[0] > 0)
      throw Diverged(step, "gradient became non-finite at step " + std::to_string(step + 1) + " (a local step, on " +
                               std::to_string(static_cast<int>(ranks_refused[0])) + " of " + std::to_string(ranks) +
                               " ranks)");
  } else if (par_.model_parallel() != nullptr) {
    double shards_refused[1] = {refused.empty() ? 0.0 : 1.0};
    world_.sum(shards_refused);
    if (shards_refused[0] > 0)
      throw Diverged(step, "gradient became non-finite at step " + std::to_string(step + 1) + " (in the " +
                               (par_.model_parallel()->form() == ModelParallel::Form::pipeline ? "stages" : "shards") + " of " +
                               std::to_string(static_cast<int>(shards_refused[0])) + " of " + std::to_string(ranks) +
                               " ranks)");
  }
  t.optimizer = phase.seconds();
  seq.end("optimizer", "step");

  if (par_.averages_after(step)) {
    Stopwatch avg;
    par_.average_models(model_);
    t.comm += avg.seconds();
    t.exposed_comm += avg.seconds();
    seq.end("model average", "communication");
  }

  t.total = total.seconds();
  if (par_.same_clock() && !local) {
    // Split the wait after backward: until the slowest rank's backward ended (load imbalance, which no
    // overlap can hide), and after it (communication that overlap did not hide). After t.total, so this
    // allreduce is not counted in the step's time.
    const double last = world_.max(backward_end);
    const double wait = std::clamp(last - backward_end, 0.0, t.exposed_comm);
    st.wait_slowest += wait;
    st.after_last += t.exposed_comm - wait;
    st.split_steps++;
  }
  // The loss: every rank's own, or, with pipeline stages, the last stage's of each replica.
  st.add_step(t, agree[0] / (pipeline_ != nullptr ? replicas : ranks));
  st.step = step + 1;
  if (tracing) {
    seq.end("bookkeeping", "step");
    seq.enclose("step " + std::to_string(step + 1), "step");
  }
  stop_signal_ = agree[3] > 0 ? static_cast<int>(agree[4] / agree[3]) : 0;
}

}  // namespace dtbench
