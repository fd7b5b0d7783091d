#include "workloads/train/async_loop.hpp"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <memory>
#include <thread>

#include "core/timer.hpp"
#include "core/trace.hpp"
#include "optim/optimizer.hpp"
#include "reducers/mpi_comm.hpp"
#include "workloads/train/async_ps.hpp"
#include "workloads/train/mllog_keys.hpp"
#include "workloads/train/stop_signal.hpp"

namespace dtbench {

AsyncOutcome run_async_sgd(const World& world, TrainModel& model, const optim::Schedule& schedule, TrainingData& data,
                           const Cadence& cadence, long per_rank, bool stop_at_target, int64_t staleness_bound,
                           int servers, int poll_us, const Json& optimizer_section, uint64_t seed, TrainState& st,
                           mllog::Logger* log, const FaultInjection* fault,
                           const std::function<void(int64_t, double)>& evaluate,
                           const std::function<void(int64_t)>& progress) {
  const int ranks = world.size();
  const int64_t total_steps = cadence.total_steps;
  MpiComm ps(world.comm());
  ps.set_poll_sleep_us(poll_us);  // the servers' and workers' waits (reducer.poll_us)
  // Rank s < servers serves shard s; one server (rank 0) uses the model's own optimizer.
  const optim::ParamTable& table = model.host_optimizer()->table();
  const std::vector<ParamShard> shards = shard_params(table, servers);
  std::unique_ptr<optim::Optimizer> shard_optimizer;
  std::unique_ptr<AsyncServer> server;
  std::thread server_thread;
  std::exception_ptr server_error;
  if (world.rank() < servers) {
    const ParamShard& mine = shards[static_cast<size_t>(world.rank())];
    optim::Optimizer* opt = model.host_optimizer();
    if (servers > 1) {
      shard_optimizer = optim::make_optimizer(optimizer_section, shard_table(table, mine), seed);
      opt = shard_optimizer.get();
    }
    server = std::make_unique<AsyncServer>(ps, model.params().subspan(mine.begin, mine.end - mine.begin), *opt,
                                           schedule, total_steps * ranks, staleness_bound);
    // A thread started here has OpenMP's default count, not the one set_up gave this rank (omp_set_num_threads
    // sets the calling thread's): the server's optimizer runs on the rank's count too.
    server_thread = std::thread([&, threads = omp_get_max_threads()] {
      omp_set_num_threads(threads);
      try {
        server->run();
      } catch (...) {
        server_error = std::current_exception();
      }
    });
  }
  AsyncWorker worker(ps, shards);
  // An evaluation after `updates` updates is labelled with step updates / K (rounded down) and that step's epoch and
  // samples, so that the three agree as in a synchronous record: the epoch was the exact update count's, up to K - 1
  // updates past the step, and a time to target read "step 8, 256 samples, epoch 1.125" (a hunt).
  const auto evaluate_after = [&](int64_t updates) { evaluate(updates / ranks, cadence.epochs(updates / ranks)); };
  AsyncOutcome out;
  bool stopped = false, diverged = false;
  // MLLOG's epochs follow the updates applied, as the record and the evaluations' labels count them: by rank 0's
  // own steps, evaluations labelled 1.09 and 1.36 fell inside epoch 0 when the other
  // workers ran ahead of rank 0 (found by a hunt). The epoch open is that of the last update rank 0 saw applied;
  // the trainer closes the last one (end_open).
  const int64_t updates_each_epoch = cadence.steps_per_epoch * ranks;
  int64_t open_epoch = -1;
  const auto follow_updates = [&](int64_t updates) {
    if (!log) return;
    const int64_t epoch = updates > 0 ? (updates - 1) / updates_each_epoch : 0;
    if (open_epoch < 0) log->start(mllog::kEpochStart, nullptr, {{mllog::kEpochNum, open_epoch = 0}});
    while (open_epoch < epoch) {
      log->end(mllog::kEpochStop, nullptr, {{mllog::kEpochNum, open_epoch}});
      log->start(mllog::kEpochStart, nullptr, {{mllog::kEpochNum, ++open_epoch}});
    }
  };
  follow_updates(0);
  for (int64_t step = 0; step < total_steps; ++step) {
    if (received_stop_signal()) {
      stopped = true;
      worker.leave(/*stop_all=*/true);  // the servers answer every other worker's next push with "finished"
      break;
    }
    StepTiming t;
    Stopwatch total, phase;
    trace::Sequence seq(step + 1);  // the worker's phases on the trace (nothing when tracing is off)
    data.make_train_batch(step);
    t.data = phase.seconds();
    seq.end("data", "step");
    phase.reset();
    model.set_batch_position({static_cast<uint64_t>(step), data.batch_offset()});
    const double loss = model.forward(data.x(), data.labels(), static_cast<int>(per_rank), true);
    t.forward = phase.seconds();
    seq.end("forward", "step");
    phase.reset();
    model.backward({});
    if (fault && fault->poisons_gradient(step + 1, world.rank()))
      model.grads()[0] = std::numeric_limits<float>::quiet_NaN();  // this worker's own gradient
    t.backward = phase.seconds();
    seq.end("backward", "step");
    phase.reset();
    const AsyncReply reply = worker.push_pull(model.grads(), model.params());
    const int64_t version = worker.version();
    t.exposed_comm = t.comm = phase.seconds();
    seq.end("push gradient, pull weights", "communication");
    if (seq.active()) seq.enclose("step " + std::to_string(step + 1), "step");
    t.total = total.seconds();
    st.add_step(t, loss);
    st.step = step + 1;
    if (reply != AsyncReply::go_on) {
      diverged = reply == AsyncReply::diverged;
      if (step + 1 < total_steps) worker.leave();
      break;
    }
    const int64_t done = step + 1;
    if (fault) fault->after_step(done, world.rank());
    follow_updates(version);
    if (world.root() && cadence.evaluates_after(done)) {
      evaluate_after(version);
      if (stop_at_target && st.tta) server->request_finish();  // server 0: the workers stop at their next push
    } else {
      progress(done);
    }
  }
  if (server_thread.joinable()) server_thread.join();
  // Every rank takes part in the collective before a server's error is rethrown, so that no rank waits in it.
  const std::vector<double> rows =
      world.gather(async_stats_row(server ? &server->stats() : nullptr, worker.traffic(), st.step));
  if (server_error) std::rethrow_exception(server_error);
  if (world.root()) out.stats = merged_stats(rows, server->stats(), servers);
  if (world.root() && out.stats["diverged"].get<bool>()) diverged = true, out.detail = out.stats["diverged_detail"];
  if (world.root()) out.stats.erase("diverged"), out.stats.erase("diverged_detail");
  int flags[2] = {diverged ? 1 : 0, stopped ? 1 : 0};
  world.max(flags);
  // The final model is the servers' master weights once every update was applied: each server's shard to every
  // rank. Rank 0's own copy is what it pulled after its last push, while the other workers' pushes still came in.
  for (int s = 0; s < servers; ++s) {
    const ParamShard& sh = shards[static_cast<size_t>(s)];
    std::span<float> part = model.params().subspan(sh.begin, sh.end - sh.begin);
    if (world.rank() == s) std::copy(server->weights().begin(), server->weights().end(), part.begin());
    world.broadcast(part, s);
  }
  // Its batch-norm running statistics are the workers' mean, as a synchronous run's per-replica statistics are where
  // the model is evaluated or saved (each worker kept its own, from its own shard; rank 0's alone were kept before).
  // A diverged run keeps rank 0's own (another worker's may hold NaN from its non-finite weights).
  const std::span<float> stats = model.host_buffers();
  const bool averaged_stats = !stats.empty() && ranks > 1 && flags[0] == 0;
  if (averaged_stats) {
    std::vector<double> mean(stats.begin(), stats.end());
    world.sum(mean);
    for (size_t i = 0; i < mean.size(); ++i) stats[i] = static_cast<float>(mean[i] / static_cast<double>(ranks));
    model.push_host_buffers();
  }
  if (flags[0]) {
    out.status = RunStatus::diverged;
    // As a synchronous run does: one that diverged before its first evaluation is evaluated where it stopped, so
    // that its curve and MLLOG file hold the accuracy it ended with (MLPerf's rules: at least one eval_accuracy).
    if (world.root() && st.curve.empty()) {
      follow_updates(worker.version());  // the epochs its log has not opened yet, before the evaluation
      evaluate_after(worker.version());
    }
  } else if (flags[1]) {
    out.detail = "stopped by a signal; asynchronous runs are not checkpointed, so this run cannot be resumed";
    out.status = RunStatus::preempted;
    // Its MLLOG file is final (no checkpoint continues it; it ends with run_stop "aborted"): evaluated where it
    // stopped when it has no evaluation yet, as a diverged run is, or the log broke MLPerf's rule of at least one
    // eval_accuracy (found by a hunt; a synchronous run's log stops before run_stop, to be continued).
    if (world.root() && st.curve.empty()) {
      follow_updates(worker.version());  // the epochs its log has not opened yet, before the evaluation
      evaluate_after(worker.version());
    }
  } else {
    // A run that went to its end is evaluated on that final model, unless rank 0's last evaluation saw every
    // update already (its label counts server 0's updates, K per step) and its statistics are that model's (no
    // batch norm, or one worker): a second point at the last step then holds the saved model's. One stopped at its
    // target keeps the evaluation that reached it.
    const bool finished_early = world.root() && server->stats().updates < total_steps * ranks;
    if (world.root() && !finished_early &&
        (st.curve.empty() || st.curve.back().step < total_steps || averaged_stats)) {
      // Rank 0's own steps may end before the other workers' last pushes: the log follows every update first, or
      // the final evaluation fell in an earlier epoch and the last epochs were never opened (found by a hunt).
      follow_updates(total_steps * ranks);
      evaluate_after(total_steps * ranks);
    }
    out.status = st.tta ? RunStatus::reached_target : RunStatus::completed;
  }
  return out;
}

}  // namespace dtbench
