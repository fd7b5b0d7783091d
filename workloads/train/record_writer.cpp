#include "workloads/train/record_writer.hpp"

#include <algorithm>
#include <functional>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/checkpoint_files.hpp"
#include "workloads/train/data_parallel.hpp"
#include "workloads/train/run_paths.hpp"
#include "workloads/backend/train_model.hpp"

namespace dtbench {
namespace fs = std::filesystem;
namespace {

// The per-rank means gathered for the record: the seven timing phases and the two parts of the split.
constexpr size_t kFields = 9;

Json rank_timing(int k, const double* v) {
  return {{"rank", k},          {"data", v[0]}, {"forward", v[1]},   {"backward", v[2]},
          {"exposed_comm", v[3]}, {"comm", v[4]}, {"optimizer", v[5]}, {"total", v[6]}};
}


}  // namespace

Baseline read_baseline(const std::string& path, const Json& cfg) {
  const RecordFile base = read_run_record(path);
  if (!base.record) {
    std::string why = base.problem;  // "<path>: <why>"
    if (why.rfind(path + ": ", 0) == 0) why.erase(0, path.size() + 2);
    throw BadInput(path + ": not a dtbench run record (--baseline): " + why);
  }
  const RunRecord& r = *base.record;
  if (!r.done())
    throw BadInput(path + ": --baseline: the run is " + to_string(r.status) + ", not done: its throughput is no baseline");
  // At least one image in 11.6 days: a smaller figure (1e-320 is a valid JSON number) is no measurement, and
  // the scaling efficiency divided by it would overflow.
  if (!(r.images_per_second >= 1e-6)) {
    std::ostringstream got;
    got << r.images_per_second;
    throw BadInput(path + ": --baseline: /throughput/images_per_second is " + got.str() +
                   ", below 1e-06: no measured throughput");
  }
  // Scaling efficiency compares one rank's images/s with this run's per rank: the same model, data, backend and
  // precision (a bf16 run against an fp32 baseline read 353%; a hunt). The batch per rank may differ: strong scaling
  // keeps the global batch, as bench/reference_runs.sh does.
  // Keys present on both sides only: a record written before a key existed lacks it (the committed reference records
  // have no /model/ghost_batch), and /data/path is where this machine keeps the files, not the workload.
  for (const char* key : {"/model", "/data", "/backend", "/precision"}) {
    const Json::json_pointer p(key);
    if (!cfg.contains(p) || !r.config.contains(p)) continue;
    const Json &mine = cfg[p], &theirs = r.config[p];
    if (!mine.is_object() || !theirs.is_object()) {
      if (mine != theirs) throw BadInput(path + ": --baseline: another workload (its config differs at " + key + ")");
      continue;
    }
    // Keys on both sides only, at every depth: /data/synthetic/seed came after the committed reference records.
    const std::function<std::string(const Json&, const Json&, const std::string&)> shared_difference =
        [&](const Json& a, const Json& b, const std::string& at) -> std::string {
      if (!a.is_object() || !b.is_object()) return a == b ? "" : at;
      for (auto it = a.begin(); it != a.end(); ++it)
        if (b.contains(it.key()))
          if (std::string d = shared_difference(it.value(), b[it.key()], at + "/" + it.key()); !d.empty()) return d;
      return "";
    };
    for (auto it = mine.begin(); it != mine.end(); ++it)
      if (it.key() != "path" && theirs.contains(it.key()))
        if (const std::string d = shared_difference(theirs[it.key()], it.value(), std::string(key) + "/" + it.key());
            !d.empty())
          throw BadInput(path + ": --baseline: another workload (its config differs at " + d + ")");
  }
  return {path, r.images_per_second / r.ranks};
}

void write_run_record(const World& world, const RunFacts& f, const TrainState& st, RunStatus status,
                      const std::string& detail, TrainModel& model, const DataParallel* parallel,
                      const Json& asynchronous, double wall_seconds, const std::string& started_utc) {
  // Per-rank timing means, gathered so the record shows imbalance (a slow rank shows as others'
  // exposed communication).
  const double n = std::max<double>(static_cast<double>(st.timed_steps), 1.0);
  const double ns = std::max<double>(static_cast<double>(st.split_steps), 1.0);
  const double mine[kFields] = {st.sum.data / n,         st.sum.forward / n, st.sum.backward / n,
                                st.sum.exposed_comm / n, st.sum.comm / n,    st.sum.optimizer / n,
                                st.sum.total / n,        st.wait_slowest / ns, st.after_last / ns};
  const std::vector<double> all = world.gather(mine);
  if (!world.root()) return;

  const int ranks = f.ranks;
  RunRecord r;
  r.name = f.config["name"].get<std::string>();
  r.config = f.config;
  r.ranks = ranks;
  r.global_batch = f.global_batch;
  r.per_rank_batch = f.per_rank;
  r.status = status;
  r.status_detail = detail;
  r.started_utc = started_utc;
  r.finished_utc = utc_timestamp();
  r.wall_seconds = wall_seconds;
  r.steps = st.step;
  r.epochs = static_cast<double>(st.step) / static_cast<double>(f.steps_per_epoch);
  r.samples = st.step * f.global_batch;
  // The record's breakdown is the mean over ranks of each rank's mean.
  Json per_rank = Json::array();
  StepTiming mean;
  double wait_slowest = 0, after_last = 0;
  for (int k = 0; k < ranks; ++k) {
    const double* v = &all[kFields * static_cast<size_t>(k)];
    wait_slowest += v[7] / ranks, after_last += v[8] / ranks;
    per_rank.push_back(rank_timing(k, v));
    mean.data += v[0] / ranks, mean.forward += v[1] / ranks, mean.backward += v[2] / ranks;
    mean.exposed_comm += v[3] / ranks, mean.comm += v[4] / ranks, mean.optimizer += v[5] / ranks;
    mean.total += v[6] / ranks;
  }
  r.timing = mean;
  r.images_per_second = st.images_per_second(f.global_batch);
  r.steady_images_per_second = st.steady_images_per_second(f.global_batch);
  double gradient_bytes = static_cast<double>(model.params().size() * sizeof(float));
  // Pipeline stages hold different parts of the model: a rank's bytes are its stage's, and the run's the stages' mean
  // (rank 0's alone moved with the cut: 704 to 308416 bytes for one 2-stage job; found by a hunt).
  if (!f.pipeline.is_null() && !f.pipeline["per_stage"].empty()) {
    double parameters = 0;
    for (const Json& stage : f.pipeline["per_stage"]) parameters += stage["parameters"].get<double>();
    gradient_bytes = parameters * sizeof(float) / static_cast<double>(f.pipeline["per_stage"].size());
  }
  // (Rank 0's: they count only in local SGD's averages, which pipeline stages refuse.)
  const double statistics_bytes = static_cast<double>(model.buffers().size() * sizeof(float));
  // What each rank hands to allreduce per step: gradients, local SGD's averages, K-FAC's factors (averaged like the
  // gradients). A 1-rank synchronous run would allreduce its gradients; asynchronous workers allreduce nothing.
  double allreduced = parallel ? parallel->bytes_allreduced_per_step(gradient_bytes, statistics_bytes, st.step)
                      : f.config["parallel"]["mode"] == "sync" ? gradient_bytes
                                                               : 0.0;
  if (parallel && st.curvature_exchanges > 0 && st.step > 0) allreduced += st.curvature_bytes / double(st.step);
  // Sent for it, by the bus factor (nccl-tests' busbw convention). An asynchronous worker puts a gradient and gets the
  // weights: what its Comm counted, per step (rank 0's `asynchronous` has it; the other ranks write no record).
  r.bytes_communicated_per_step = parallel ? parallel->bus_bytes(allreduced)
                                  : asynchronous.is_object() ? asynchronous.value("worker_bytes_per_step", 0.0)
                                                             : 0.0;
  // Model parallelism's activations: rank 0's received bytes, which an allgather's ranks also send (exactly so
  // for equal shards).
  if (!f.model_parallel.is_null())
    r.bytes_communicated_per_step += f.model_parallel["activation_bytes_received_per_step"].get<double>();
  // Pipeline stages: the activations and gradients a stage sends per step, the stages' mean.
  if (!f.pipeline.is_null()) {
    double sent = 0;
    for (const Json& st : f.pipeline["per_stage"]) sent += st["bytes_sent_per_step"].get<double>();
    r.bytes_communicated_per_step += sent / static_cast<double>(f.pipeline["per_stage"].size());
  }
  r.curve = st.curve;
  r.target_accuracy = f.config["eval"]["target_accuracy"].get<double>();
  r.time_to_accuracy = st.tta;
  r.extra["per_rank_timing"] = per_rank;
  r.extra["steps_per_epoch"] = f.steps_per_epoch;
  r.extra["peak_lr"] = f.peak_lr;
  r.extra["warmup_steps"] = f.warmup_steps;
  r.extra["test_set_samples"] = f.test_set_samples;
  r.extra["total_steps"] = f.total_steps;
  if (!f.init_from.empty()) r.extra["init_from"] = f.init_from;
  if (f.stop_at > 0) r.extra["stop_at"] = f.stop_at;
  r.extra["parameters"] = model.params().size();
  r.extra["flops_per_sample_train"] = model.flops_per_sample_train();
  // A model-parallel rank does its shard's part of the work on its group's whole batch.
  r.extra["achieved_gflops"] = st.sum.total > 0 ? model.rank_flops_per_sample_train() *
                                                      static_cast<double>(f.per_rank * st.timed_steps) /
                                                      st.sum.total / 1e9
                                                : 0.0;
  if (!f.model_parallel.is_null()) r.extra["model_parallel"] = f.model_parallel;
  if (!f.pipeline.is_null()) r.extra["pipeline"] = f.pipeline;
  // Rank 0's memory for the model: what model parallelism divides, and what it does not (activations).
  r.extra["memory_per_rank"] = {{"weights_and_gradients_bytes", 2 * model.params().size_bytes()},
                                {"optimizer_state_bytes", model.optimizer_state().size()},
                                {"activation_bytes", model.activation_bytes()},
                                {"note", "rank 0's fp32 weights and gradients, its optimizer state as checkpointed, "
                                         "and the largest training plan's activations, their gradients and "
                                         "workspaces (cpu backend; 0 on the gpu backend, not measured)"}};
  r.extra["bytes_allreduced_per_step"] = allreduced;
  if (parallel) r.extra["buckets"] = parallel->bucket_count();
  r.extra["exposed_comm_share"] = mean.total > 0 ? mean.exposed_comm / mean.total : 0.0;
  if (st.split_steps > 0) {
    r.extra["exposed_comm_split"] = {
        {"unit", "seconds per step (mean over ranks)"},
        {"waiting_for_slowest_backward", wait_slowest},
        {"after_last_backward", after_last},
        {"note", "exposed_comm = waiting until the slowest rank's backward ended (imbalance) + communication "
                 "after it (not hidden by overlap); all ranks on one host, one clock"}};
  }
  if (!f.weights.empty() && status != RunStatus::preempted) {
    // Written by the trainer as the run ends (trainer.cpp, Run::save_weights): parameters, then buffers.
    const size_t parameters = f.whole_parameters > 0 ? f.whole_parameters : model.params().size();
    // The floats written: with pipeline stages every stage's batch-norm statistics, where rank 0 holds its own
    // stage's only (the record said so, the file was refused as damaged, and a sweep ran the run again at every
    // rerun; found by a hunt).
    r.extra["weights"] = {{"file", f.weights.filename().string()},
                          {"floats", f.weights_floats > 0 ? f.weights_floats : parameters + model.buffers().size()},
                          {"parameters", parameters}};
    // So that a reader tells this run's file from another's of the same shape (reproduce compared a file copied
    // over it, and claim a flipped to contradicted; found by a hunt).
    if (!f.weights_crc32.empty()) r.extra["weights"]["crc32"] = f.weights_crc32;
  }
  if (st.curvature_exchanges > 0) {
    r.extra["kfac_statistics"] = {
        {"exchanges", st.curvature_exchanges},
        {"bytes_allreduced", st.curvature_bytes},
        {"bytes_per_exchange", st.curvature_bytes / double(st.curvature_exchanges)},
        {"note", "the Kronecker factors (every layer's A and G, fp32) averaged across ranks on statistics steps; "
                 "bytes_communicated_per_step includes them"}};
  }
  if (!st.preemptions.empty()) r.extra["preemptions"] = st.preemptions;
  if (!asynchronous.is_null()) {
    r.extra["async"] = asynchronous;
    // The images trained on are the updates' (one per-rank batch each): rank 0's own steps times the global batch
    // count other workers' steps it did not see when a run stops early (its target, a signal, a divergence).
    r.samples = asynchronous["updates"].get<int64_t>() * f.per_rank;
    // Steps as the curve labels them (updates / K, one global batch each), so that the time to accuracy's step
    // never lies beyond the record's: rank 0's own count lagged the others' (23 records of claim e said 351 steps
    // and a target reached at step 367). Each worker's own count is extra.async.worker_steps.
    r.steps = r.samples / f.global_batch;
    r.epochs = static_cast<double>(r.samples) / static_cast<double>(f.steps_per_epoch * f.global_batch);
  }
  if (f.baseline) {
    // Scaling efficiency: this run's images/s against K times the baseline's images/s per rank.
    const double one = f.baseline->images_per_second_per_rank;
    r.extra["baseline_record"] = f.baseline->path;
    r.extra["scaling_efficiency"] = one > 0 ? r.images_per_second / (ranks * one) : 0.0;
  }
  // The folder may have been removed while the run trained (the checkpoint writer recreates it too): the record
  // is the run's result, so it is written rather than lost.
  std::error_code ec;
  if (f.record.has_parent_path()) fs::create_directories(f.record.parent_path(), ec);
  // A preempted record is replaced by its own continuation (--resume); any other record is never overwritten.
  write_json_atomic(f.record, r.to_json(), !(f.resume && preempted_record(f.record)));
}

}  // namespace dtbench
