#include "workloads/train/trainer.hpp"

#include <mpi.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "core/atomic_file.hpp"
#include "config/run_config.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/run_record.hpp"
#include "core/timer.hpp"
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"
#include "reducers/mpi_comm.hpp"
#include "reducers/reducer.hpp"
#include "workloads/data/dataset.hpp"
#include "workloads/data/shard.hpp"
#include "workloads/models/model.hpp"
#include "workloads/train/async_ps.hpp"
#include "workloads/train/buckets.hpp"
#include "workloads/train/checkpoint.hpp"
#include "workloads/train/mllog.hpp"
#include "workloads/train/noise_scale.hpp"
#include "workloads/train/train_model.hpp"
#include "core/cuda_info.hpp"

namespace dtbench {
namespace fs = std::filesystem;

namespace {

// Set by SIGUSR1/SIGTERM (what Slurm sends before a time limit or preemption). Ranks agree on it
// in the per-step consensus, so all of them stop at the same step boundary.
std::atomic<int> g_stop_signal{0};
extern "C" void on_stop_signal(int sig) { g_stop_signal.store(sig); }

std::string derived_name(const Json& c, int ranks, long global_batch) {
  return c["model"]["arch"].get<std::string>() + "-" + c["optimizer"]["name"].get<std::string>() + "-" +
         c["reducer"]["name"].get<std::string>() + "-k" + std::to_string(ranks) + "-b" +
         std::to_string(global_batch) + "-s" + std::to_string(c["seed"].get<int64_t>());
}

// Rank 0 decides; every rank learns the outcome. Used for checks whose failure must end all ranks
// with the same exit code (e.g. an existing record or an unwritable folder).
void agree_on_error(MPI_Comm comm, int rank, const std::optional<Error>& err) {
  int code = (rank == 0 && err) ? static_cast<int>(err->code()) : 0;
  MPI_Bcast(&code, 1, MPI_INT, 0, comm);
  if (code == 0) return;
  std::string msg = (rank == 0 && err) ? err->what() : "";
  int len = static_cast<int>(msg.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, comm);
  msg.resize(static_cast<size_t>(len));
  MPI_Bcast(msg.data(), len, MPI_CHAR, 0, comm);
  throw SameOnAllRanks(static_cast<ExitCode>(code), msg);
}

bool is_tty() { return ::isatty(STDOUT_FILENO) != 0; }

// A NaN/Inf loss or gradient: every rank throws it at the same step (the consensus sees it).
struct Diverged : std::runtime_error {
  Diverged(int64_t s, const std::string& what) : std::runtime_error(what), step(s) {}
  int64_t step;
};

}  // namespace

// Run-level state that a checkpoint carries (besides each rank's buffers).
struct TrainState {
  int64_t step = 0;            // optimizer steps done
  double elapsed = 0;          // wall seconds of the run so far (across resumes)
  StepTiming sum;              // summed seconds per phase over `timed_steps`
  int64_t timed_steps = 0;
  double train_loss_sum = 0;   // mean training loss over the steps since the last evaluation
  int64_t train_loss_steps = 0;
  std::vector<EvalPoint> curve;
  std::optional<TimeToAccuracy> tta;
  Json preemptions = Json::array();
  Json noise = Json::object();  // NoiseScaleEstimator state
  // Exposed communication split (same-host runs): summed waiting for the slowest rank's backward, and
  // summed communication after it, over split_steps steps.
  double wait_slowest = 0, after_last = 0;
  int64_t split_steps = 0;

  Json to_json() const {
    Json c = Json::array();
    for (const auto& p : curve)
      c.push_back({p.epoch, p.step, p.samples, p.wall_seconds, p.train_loss, p.test_loss, p.test_accuracy, p.lr,
                   p.b_simple ? Json(*p.b_simple) : Json(nullptr)});
    Json t = tta ? Json{tta->seconds, tta->step, tta->epoch, tta->samples} : Json(nullptr);
    return {{"step", step}, {"elapsed", elapsed},
            {"sum", {sum.data, sum.forward, sum.backward, sum.exposed_comm, sum.comm, sum.optimizer, sum.total}},
            {"timed_steps", timed_steps}, {"train_loss_sum", train_loss_sum}, {"train_loss_steps", train_loss_steps},
            {"curve", c}, {"tta", t}, {"preemptions", preemptions}, {"noise", noise},
            {"split", {wait_slowest, after_last, split_steps}}};
  }
  static TrainState from_json(const Json& j) {
    TrainState s;
    s.step = j["step"];
    s.elapsed = j["elapsed"];
    const Json& u = j["sum"];
    s.sum = {u[0], u[1], u[2], u[3], u[4], u[5], u[6]};
    s.timed_steps = j["timed_steps"];
    s.train_loss_sum = j["train_loss_sum"];
    s.train_loss_steps = j["train_loss_steps"];
    for (const auto& p : j["curve"]) {
      EvalPoint e{p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], std::nullopt};
      if (!p[8].is_null()) e.b_simple = p[8].get<double>();
      s.curve.push_back(e);
    }
    if (!j["tta"].is_null()) s.tta = TimeToAccuracy{j["tta"][0], j["tta"][1], j["tta"][2], j["tta"][3]};
    s.preemptions = j["preemptions"];
    s.noise = j["noise"];
    if (j.contains("split")) {
      s.wait_slowest = j["split"][0];
      s.after_last = j["split"][1];
      s.split_steps = j["split"][2];
    }
    return s;
  }
};

// ---------------------------------------------------------------------------------------------
// One run. Members are set up in the constructor in the order a reader follows the run.
class Run {
 public:
  Run(const TrainArgs& args, Json user);
  ~Run() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (bn_comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&bn_comm_);
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;
  int execute();
  const Json& config() const { return cfg_; }

 private:
  // Setup
  void setup_paths();
  void setup_data();
  void setup_model();
  std::unique_ptr<TrainModel> make_gpu_model(const models::ModelSpec& spec, uint64_t seed);
  void validate_model_spec(const models::ModelSpec& spec) const;
  void setup_parallel();
  void try_resume();

  // The loop
  bool local_step(int64_t step) const;  // local SGD / post-local SGD phase: no gradient allreduce
  void train_step(int64_t step);
  void average_models();
  void evaluate(int64_t steps_done, double epoch, bool solo);
  RunStatus run_async(std::string& detail);
  void checkpoint(int64_t next_step);
  void write_record(RunStatus status, const std::string& detail);
  void progress(int64_t step);
  void inject_fault(int64_t done);
  void save_weights();

  TrainArgs args_;
  Json cfg_;
  int rank_ = 0, ranks_ = 1;
  long per_rank_ = 0, global_ = 0;
  MPI_Comm world_ = MPI_COMM_WORLD;
  MPI_Comm bn_comm_ = MPI_COMM_NULL;  // synchronised batch norm's allreduces

  fs::path record_path_, ckpt_dir_, mllog_path_;
  data::TrainTest data_;
  std::unique_ptr<data::EpochSharder> sharder_;
  std::unique_ptr<data::BatchMaker> train_maker_, eval_maker_;
  std::vector<float> x_;
  std::vector<int32_t> y_;

  std::unique_ptr<TrainModel> model_;  // with its optimizer; cpu or gpu (train_model.hpp)
  std::unique_ptr<optim::Schedule> sched_;
  std::unique_ptr<MpiComm> comm_;
  std::unique_ptr<Reducer> reducer_;
  std::unique_ptr<GradientBuckets> buckets_;
  std::optional<NoiseScaleEstimator> noise_;
  std::unique_ptr<mllog::Logger> log_;

  TrainState st_;  // everything a checkpoint carries besides the buffers
  int64_t total_steps_ = 0, steps_per_epoch_ = 0, switch_step_ = 0;
  double run_start_ = 0;  // now_seconds() at run_start, shifted back by time spent before a resume
  double last_progress_ = 0;
  bool stop_requested_ = false;
  int64_t staged_step_ = -1;  // gpu: the step whose batch is already staged on the device
  bool same_clock_ = false;   // every rank on this host (one steady clock) and host-timed backward
  int stop_signal_ = 0;
  Json asynchronous_;  // async SGD: the server's staleness statistics
  std::string started_utc_;
};

Run::Run(const TrainArgs& args, Json user) : args_(args) {
  MPI_Comm_rank(world_, &rank_);
  MPI_Comm_size(world_, &ranks_);
  cfg_ = config::resolve(user, ranks_);
  per_rank_ = config::per_rank_batch(cfg_, ranks_);
  global_ = config::global_batch(cfg_, ranks_);
  if (cfg_["name"].get<std::string>().empty()) cfg_["name"] = derived_name(cfg_, ranks_, global_);
  if (cfg_["threads"].get<int64_t>() > 0) omp_set_num_threads(static_cast<int>(cfg_["threads"].get<int64_t>()));
  if (cfg_["backend"] == "gpu") {
#ifndef DTBENCH_HAVE_CUDA
    throw BadInput("/backend: \"gpu\" but this dtbench was built without CUDA (no toolkit found at configure time)");
#endif
    if (cuda_device_count() == 0)
      throw BadInput("/backend: \"gpu\" but there is no usable CUDA device here (" +
                     cuda_info().value("status", std::string("unknown")) + "); use \"cpu\"");
    if (cfg_["parallel"]["mode"] == "async")
      throw BadInput("/parallel/mode: asynchronous SGD runs on the cpu backend only (its server keeps host weights)");
  } else {
    if (cfg_["precision"] == "fp16")
      throw BadInput("/precision: \"fp16\" is a GPU precision (dynamic loss scaling); the cpu backend has fp32 and bf16");
    if (cfg_["reducer"]["name"] == "nccl") throw BadInput("/reducer/name: \"nccl\" needs the gpu backend");
  }
  inject_fault(-1);  // validates --inject-fault before any work
}

void Run::setup_paths() {
  const Json& out = cfg_["output"];
  std::string file = out["record"].get<std::string>();
  if (file.empty()) file = cfg_["name"].get<std::string>() + ".json";
  if (file.find('/') != std::string::npos) throw BadInput("/output/record: a file name, not a path: \"" + file + "\"");
  record_path_ = fs::path(out["dir"].get<std::string>()) / file;
  std::string stem = record_path_.string().substr(0, record_path_.string().size() - (record_path_.extension() == ".json" ? 5 : 0));
  ckpt_dir_ = stem + ".ckpt";
  mllog_path_ = stem + ".mllog";
  std::optional<Error> err;
  if (rank_ == 0) {
    try {
      bool resuming = args_.resume && !read_header(ckpt_dir_).is_null();
      check_writable(record_path_, !resuming);
    } catch (const Error& e) {
      err = e;
    }
  }
  agree_on_error(world_, rank_, err);
}

void Run::setup_data() {
  data_ = data::load(cfg_["data"], static_cast<uint64_t>(cfg_["seed"].get<int64_t>()));
  uint64_t seed = static_cast<uint64_t>(cfg_["seed"].get<int64_t>());
  sharder_ = std::make_unique<data::EpochSharder>(data_.train.size(), ranks_, static_cast<size_t>(per_rank_), seed);
  train_maker_ = std::make_unique<data::BatchMaker>(data_.norm, data_.augment, seed);
  eval_maker_ = std::make_unique<data::BatchMaker>(data_.norm, data::AugmentOptions{}, seed);
  size_t eval_batch = static_cast<size_t>(cfg_["eval"]["batch"].get<int64_t>());
  size_t max_batch = std::max(static_cast<size_t>(per_rank_), eval_batch);
  x_.resize(max_batch * data_.train.image_bytes());
  y_.resize(max_batch);
  steps_per_epoch_ = static_cast<int64_t>(sharder_->steps_per_epoch());
  total_steps_ = cfg_["duration"]["steps"].get<int64_t>() > 0
                     ? cfg_["duration"]["steps"].get<int64_t>()
                     : cfg_["duration"]["epochs"].get<int64_t>() * steps_per_epoch_;
}

std::unique_ptr<TrainModel> Run::make_gpu_model(const models::ModelSpec& spec, uint64_t seed) {
#ifdef DTBENCH_HAVE_CUDA
  return make_gpu_train_model(spec, seed, rank_, cfg_["optimizer"]);
#else
  (void)spec, (void)seed;
  throw BadInput("/backend: \"gpu\" but this dtbench was built without CUDA");
#endif
}

void Run::validate_model_spec(const models::ModelSpec& spec) const {
#ifdef DTBENCH_HAVE_CUDA
  if (cfg_["backend"] == "gpu") return validate_gpu_model_spec(spec);
#endif
  models::validate(spec);
}

void Run::setup_model() {
  models::ModelSpec spec;
  spec.arch = cfg_["model"]["arch"].get<std::string>();
  spec.in_c = data_.train.channels;
  spec.in_h = data_.train.height;
  spec.in_w = data_.train.width;
  spec.classes = data_.train.classes;
  spec.zero_init_residual = cfg_["model"]["zero_init_residual"].get<bool>();
  spec.precision = cfg_["precision"].get<std::string>();
  spec.hidden = spec.arch == "mlp" ? static_cast<int>(cfg_["model"]["hidden"].get<int64_t>()) : 0;
  spec.label_smoothing = cfg_["model"]["label_smoothing"].get<float>();
  spec.dropout = cfg_["model"]["dropout"].get<float>();
  uint64_t seed = static_cast<uint64_t>(cfg_["seed"].get<int64_t>());
  // Every rank has the same config and data shape, so a spec the network cannot take fails alike on all of
  // them: one message and exit 2, not one abort per rank.
  try {
    validate_model_spec(spec);
  } catch (const Error& e) {
    throw SameOnAllRanks(e.code(), e.what());
  }
  model_ = cfg_["backend"] == "gpu" ? make_gpu_model(spec, seed) : make_cpu_train_model(spec, seed, cfg_["optimizer"]);

  // Every rank built the same weights from the same seed; broadcasting rank 0's makes that a fact
  // rather than an assumption (and covers models initialised from anything else).
  auto p = model_->host_params();
  auto b = model_->host_buffers();
  MPI_Bcast(p.data(), static_cast<int>(p.size()), MPI_FLOAT, 0, world_);
  if (!b.empty()) MPI_Bcast(b.data(), static_cast<int>(b.size()), MPI_FLOAT, 0, world_);
  model_->push_host_params();
  model_->push_host_buffers();
  sched_ = optim::make_schedule(cfg_["optimizer"], cfg_["lr_scaling"], cfg_["schedule"],
                                optim::RunShape{global_, steps_per_epoch_, total_steps_});
}

void Run::setup_parallel() {
  const Json& par = cfg_["parallel"];
  std::string mode = par["mode"].get<std::string>();
  switch_step_ = 0;  // local_sgd: local from the first step
  if (mode == "post_local_sgd")
    switch_step_ = par["switch_step"].get<int64_t>() > 0 ? par["switch_step"].get<int64_t>()
                                                          : par["switch_epoch"].get<int64_t>() * steps_per_epoch_;
  if (mode == "sync") switch_step_ = total_steps_ + 1;
  if (par["sync_bn"].get<bool>()) {
    // Its own communicator: the batch-norm allreduces run on the compute thread while the reducer's
    // bucket allreduces may be in flight on the communication thread.
    MPI_Comm_dup(world_, &bn_comm_);
    MPI_Comm bn = bn_comm_;
    model_->set_cross_replica_sum([bn](double* data, size_t n) {
      MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, bn);
    });
  }

  if (mode == "async") return;  // the parameter server has its own protocol (async_ps.hpp)
  comm_ = std::make_unique<MpiComm>(world_);
  comm_->set_poll_sleep_us(static_cast<int>(cfg_["reducer"]["poll_us"].get<int64_t>()));
  ReducerOptions ro;
  ro.servers = static_cast<int>(cfg_["reducer"]["servers"].get<int64_t>());
  reducer_ = model_->make_reducer(cfg_["reducer"]["name"].get<std::string>(), *comm_, ro);
  std::vector<TensorRange> ranges;
  for (const auto& t : model_->param_table()) ranges.push_back({t.offset, t.size});
  size_t bucket_bytes = static_cast<size_t>(cfg_["reducer"]["bucket_mib"].get<double>() * 1024 * 1024);
  // The local gradient norms of the noise scale are taken by the buckets from host memory: not on the gpu
  // backend, whose records leave B_simple out.
  const bool host = model_->host_memory();
  buckets_ = std::make_unique<GradientBuckets>(ranges, bucket_bytes, *reducer_, cfg_["reducer"]["overlap"].get<bool>(),
                                               host);
  if (ranks_ > 1 && host) noise_.emplace(static_cast<double>(per_rank_), static_cast<double>(global_));
  // The exposed-communication split compares backward end times across ranks: only meaningful when they
  // share a clock (one host) and backward is timed on the host.
  MPI_Comm node;
  MPI_Comm_split_type(world_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  same_clock_ = ranks_ > 1 && node_size == ranks_ && host;
}

void Run::try_resume() {
  if (!args_.resume) return;
  Json header = read_header(ckpt_dir_);
  if (header.is_null()) return;  // nothing to resume: start fresh
  Json saved = header["config"];
  if (saved != cfg_) {
    std::string where = first_difference(saved, cfg_);
    throw BadInput(ckpt_dir_.string() + ": checkpoint was written by a different config (first difference at " +
                   where + "); resume needs the same config");
  }
  if (header["ranks"].get<int>() != ranks_)
    throw BadInput(ckpt_dir_.string() + ": checkpoint was written by " + std::to_string(header["ranks"].get<int>()) +
                   " ranks, this run has " + std::to_string(ranks_));
  st_ = TrainState::from_json(header["state"]);
  RankState rs = read_rank_state(ckpt_dir_, rank_, st_.step);
  auto p = model_->host_params();
  auto b = model_->host_buffers();
  if (rs.params.size() != p.size() || rs.buffers.size() != b.size())
    throw BadInput(ckpt_dir_.string() + ": checkpoint holds a different model (parameter count differs)");
  std::copy(rs.params.begin(), rs.params.end(), p.begin());
  std::copy(rs.buffers.begin(), rs.buffers.end(), b.begin());
  model_->push_host_params();
  model_->push_host_buffers();
  model_->load_optimizer_state(rs.optimizer);
  if (rs.extra.contains("backend")) model_->load_extra_state(rs.extra["backend"]);
  sched_->load_state(rs.extra["schedule"]);
  if (noise_) noise_->load_state(st_.noise);
  st_.preemptions.back()["resumed_utc"] = utc_timestamp();
}

bool Run::local_step(int64_t step) const { return ranks_ > 1 && step >= switch_step_; }

// One synchronous (or local) SGD step. Timing phases are measured on this rank; the record averages.
void Run::train_step(int64_t step) {
  const int64_t epoch = step / steps_per_epoch_;
  const size_t s = static_cast<size_t>(step % steps_per_epoch_);
  StepTiming t;
  Stopwatch total, phase;

  const bool staging = model_->stages_batches();
  if (!staging || staged_step_ != step) {
    auto idx = sharder_->indices(static_cast<uint64_t>(epoch), s, rank_);
    train_maker_->make(data_.train, idx, static_cast<uint64_t>(epoch), x_.data(), y_.data());
    if (staging) model_->stage(x_.data(), y_.data(), static_cast<int>(per_rank_));
  }
  t.data = phase.seconds();

  phase.reset();
  const int n = static_cast<int>(per_rank_);
  double loss = staging ? model_->forward_staged(n) : model_->forward(x_.data(), y_.data(), n, true);
  t.forward = phase.seconds();

  phase.reset();
  auto grads = model_->grads();
  const bool local = local_step(step);
  if (!local) buckets_->begin(grads.data());
  model_->backward(local ? cpu::OnReady{} : [this](size_t off, size_t n) { buckets_->ready(off, n); });
  t.backward = phase.seconds();
  double staging_seconds = 0;
  if (staging && step + 1 < total_steps_) {
    // The device is running backward (and the allreduces): make and stage the next batch meanwhile.
    Stopwatch next;
    const int64_t e1 = (step + 1) / steps_per_epoch_;
    auto idx = sharder_->indices(static_cast<uint64_t>(e1), static_cast<size_t>((step + 1) % steps_per_epoch_), rank_);
    train_maker_->make(data_.train, idx, static_cast<uint64_t>(e1), x_.data(), y_.data());
    model_->stage(x_.data(), y_.data(), n);
    staged_step_ = step + 1;
    staging_seconds = next.seconds();
    t.data += staging_seconds;  // the next step's data, made while this step's backward ran on the device
  }

  const double backward_end = now_seconds();
  double small_norm_sq = 0;
  if (!local) {
    double busy_before = reducer_->busy_seconds();
    t.exposed_comm = buckets_->finish();
    t.comm = reducer_->busy_seconds() - busy_before;
    small_norm_sq = buckets_->local_norm_sq();
    if (ranks_ > 1) model_->scale(grads, 1.0f / static_cast<float>(ranks_));
  }
  // gpu: backward() only enqueued. The device's own backward time replaces the host's enqueue time. Of
  // the host's window from the enqueue to the end of the allreduces (enqueue, staging, wait), the part
  // after both the device's backward and the host's staging had ended is exposed communication.
  if (double device = model_->last_backward_device_seconds(); device >= 0) {
    if (!local) {
      const double window = t.backward + staging_seconds + t.exposed_comm;
      t.exposed_comm = std::max(0.0, window - std::max(device, t.backward + staging_seconds));
    }
    t.backward = device;
  }

  // Per-step consensus: summed loss, summed local gradient norms, non-finite count, ranks that got a
  // stop signal and the sum of their signal numbers (so every rank learns which signal it was).
  const int sig = g_stop_signal.load();
  double agree[5] = {loss, small_norm_sq, std::isfinite(loss) ? 0.0 : 1.0, sig ? 1.0 : 0.0, static_cast<double>(sig)};
  MPI_Allreduce(MPI_IN_PLACE, agree, 5, MPI_DOUBLE, MPI_SUM, world_);
  if (agree[2] > 0)
    throw Diverged(step, "loss became NaN or Inf at step " + std::to_string(step + 1) + " (on " +
                            std::to_string(static_cast<int>(agree[2])) + " of " + std::to_string(ranks_) + " ranks)");

  if (noise_ && !local) noise_->observe(agree[1] / ranks_, model_->grads_norm_sq());

  phase.reset();
  try {
    if (model_->step_allowed()) model_->optimizer_step(sched_->lr(step));
  } catch (const optim::NonFiniteGradient& e) {
    throw Diverged(step, std::string("gradient became non-finite at step ") + std::to_string(step + 1) + ": " + e.what());
  }
  t.optimizer = phase.seconds();

  if (local && ((step + 1 - switch_step_) % cfg_["parallel"]["local_steps"].get<int64_t>() == 0)) {
    Stopwatch avg;
    average_models();
    t.comm += avg.seconds();
    t.exposed_comm += avg.seconds();
  }

  t.total = total.seconds();
  st_.sum.data += t.data, st_.sum.forward += t.forward, st_.sum.backward += t.backward;
  st_.sum.exposed_comm += t.exposed_comm, st_.sum.comm += t.comm, st_.sum.optimizer += t.optimizer;
  st_.sum.total += t.total;
  if (same_clock_ && !local) {
    // Split the wait after backward: until the slowest rank's backward ended (load imbalance, which no
    // overlap can hide), and after it (communication that overlap did not hide). After t.total, so this
    // allreduce is not counted in the step's time.
    double last = backward_end;
    MPI_Allreduce(MPI_IN_PLACE, &last, 1, MPI_DOUBLE, MPI_MAX, world_);
    const double wait = std::clamp(last - backward_end, 0.0, t.exposed_comm);
    st_.wait_slowest += wait;
    st_.after_last += t.exposed_comm - wait;
    st_.split_steps++;
  }
  st_.timed_steps++;
  st_.train_loss_sum += agree[0] / ranks_;
  st_.train_loss_steps++;
  st_.step = step + 1;
  if (agree[3] > 0) {
    stop_requested_ = true;
    stop_signal_ = static_cast<int>(agree[4] / agree[3]);
  }
}

// Local SGD: the models drift apart between averages; the average of weights and batch-norm running
// statistics goes through the configured reducer like a gradient would.
void Run::average_models() {
  if (ranks_ == 1) return;
  auto p = model_->params();
  reducer_->allreduce(p.data(), p.size());
  const float inv = 1.0f / static_cast<float>(ranks_);
  model_->scale(p, inv);
  auto b = model_->buffers();
  if (!b.empty()) {
    reducer_->allreduce(b.data(), b.size());
    model_->scale(b, inv);
  }
}

// Evaluates on the test set: sharded over all ranks, or (solo, asynchronous SGD) by rank 0 alone on
// its current weights while the other ranks go on training.
void Run::evaluate(int64_t steps_done, double epoch, bool solo) {
  if (!solo && local_step(steps_done - 1)) average_models();  // the averaged model (Lin et al. 2018)
  if (log_) log_->start(mllog::kEvalStart, nullptr, {{"epoch_num", epoch}});
  std::vector<uint32_t> idx = data::eval_indices(data_.test.size(), solo ? 1 : ranks_, solo ? 0 : rank_);
  const size_t eval_batch = static_cast<size_t>(cfg_["eval"]["batch"].get<int64_t>());
  double sums[3] = {0, 0, 0};  // loss x n, correct, n
  for (size_t i = 0; i < idx.size(); i += eval_batch) {
    size_t n = std::min(eval_batch, idx.size() - i);
    std::span<const uint32_t> part(idx.data() + i, n);
    eval_maker_->make(data_.test, part, 0, x_.data(), y_.data());
    double loss = model_->forward(x_.data(), y_.data(), static_cast<int>(n), false);
    sums[0] += loss * static_cast<double>(n);
    sums[1] += model_->correct();
    sums[2] += static_cast<double>(n);
  }
  if (!solo) MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_DOUBLE, MPI_SUM, world_);

  EvalPoint p;
  p.epoch = epoch;
  p.step = steps_done;
  p.samples = steps_done * global_;
  p.wall_seconds = now_seconds() - run_start_;
  p.train_loss = st_.train_loss_steps ? st_.train_loss_sum / static_cast<double>(st_.train_loss_steps) : 0.0;
  p.test_loss = sums[0] / sums[2];
  p.test_accuracy = sums[1] / sums[2];
  p.lr = sched_->lr(std::max<int64_t>(steps_done - 1, 0));
  if (noise_) p.b_simple = noise_->b_simple();
  st_.train_loss_sum = 0;
  st_.train_loss_steps = 0;
  st_.curve.push_back(p);
  sched_->observe(p.test_accuracy);  // plateau keys on accuracy (mode max) unless configured "min"

  const double target = cfg_["eval"]["target_accuracy"].get<double>();
  if (target > 0 && !st_.tta && p.test_accuracy >= target)
    st_.tta = TimeToAccuracy{p.wall_seconds, p.step, p.epoch, p.samples};
  if (log_) {
    log_->point(mllog::kEvalAccuracy, p.test_accuracy, {{"epoch_num", epoch}});
    log_->end(mllog::kEvalStop, nullptr, {{"epoch_num", epoch}});
  }
  if (rank_ == 0) {
    if (is_tty()) std::printf("\r\033[K");
    std::printf("epoch %.2f step %lld/%lld train_loss %.4f test_loss %.4f test_acc %.4f lr %.4g", p.epoch,
                static_cast<long long>(p.step), static_cast<long long>(total_steps_), p.train_loss, p.test_loss,
                p.test_accuracy, p.lr);
    if (p.b_simple) std::printf(" B_simple %.0f", *p.b_simple);
    std::printf(" img/s %.0f elapsed %.1fs\n",
                st_.sum.total > 0 ? static_cast<double>(global_ * st_.timed_steps) / st_.sum.total : 0.0,
                p.wall_seconds);
    std::fflush(stdout);
  }
}

void Run::checkpoint(int64_t next_step) {
  RankState rs;
  rs.step = next_step;
  auto p = model_->host_params();
  rs.params.assign(p.begin(), p.end());
  auto b = model_->host_buffers();
  rs.buffers.assign(b.begin(), b.end());
  rs.optimizer = model_->optimizer_state();
  rs.extra["backend"] = model_->extra_state();
  rs.extra["schedule"] = sched_->save_state();
  write_rank_state(ckpt_dir_, rank_, rs);
  MPI_Barrier(world_);  // every rank file exists before the header names them
  if (rank_ == 0) {
    if (noise_) st_.noise = noise_->save_state();
    write_header(ckpt_dir_, {{"config", cfg_}, {"ranks", ranks_}, {"state", st_.to_json()}});
  }
  MPI_Barrier(world_);
}

void Run::write_record(RunStatus status, const std::string& detail) {
  // Per-rank timing means, gathered so the record shows imbalance (a slow rank shows as others'
  // exposed communication).
  const double n = std::max<double>(static_cast<double>(st_.timed_steps), 1.0);
  const double ns = std::max<double>(static_cast<double>(st_.split_steps), 1.0);
  constexpr int kFields = 9;
  double mine[kFields] = {st_.sum.data / n, st_.sum.forward / n, st_.sum.backward / n, st_.sum.exposed_comm / n,
                          st_.sum.comm / n, st_.sum.optimizer / n, st_.sum.total / n, st_.wait_slowest / ns,
                          st_.after_last / ns};
  std::vector<double> all(rank_ == 0 ? kFields * static_cast<size_t>(ranks_) : 0);
  MPI_Gather(mine, kFields, MPI_DOUBLE, all.data(), kFields, MPI_DOUBLE, 0, world_);
  if (rank_ != 0) return;

  RunRecord r;
  r.name = cfg_["name"].get<std::string>();
  r.config = cfg_;
  r.ranks = ranks_;
  r.global_batch = global_;
  r.per_rank_batch = per_rank_;
  r.status = status;
  r.status_detail = detail;
  r.started_utc = started_utc_;
  r.finished_utc = utc_timestamp();
  r.wall_seconds = now_seconds() - run_start_;
  r.steps = st_.step;
  r.epochs = static_cast<double>(st_.step) / static_cast<double>(steps_per_epoch_);
  r.samples = st_.step * global_;
  // The record's breakdown is the mean over ranks of each rank's mean.
  Json per_rank = Json::array();
  StepTiming mean;
  double wait_slowest = 0, after_last = 0;
  for (int k = 0; k < ranks_; ++k) {
    const double* v = &all[kFields * static_cast<size_t>(k)];
    wait_slowest += v[7] / ranks_, after_last += v[8] / ranks_;
    per_rank.push_back({{"rank", k}, {"data", v[0]}, {"forward", v[1]}, {"backward", v[2]}, {"exposed_comm", v[3]},
                        {"comm", v[4]}, {"optimizer", v[5]}, {"total", v[6]}});
    mean.data += v[0] / ranks_, mean.forward += v[1] / ranks_, mean.backward += v[2] / ranks_;
    mean.exposed_comm += v[3] / ranks_, mean.comm += v[4] / ranks_, mean.optimizer += v[5] / ranks_;
    mean.total += v[6] / ranks_;
  }
  r.timing = mean;
  r.images_per_second = st_.sum.total > 0 ? static_cast<double>(global_ * st_.timed_steps) / st_.sum.total : 0.0;
  const double buffer_bytes = static_cast<double>(model_->params().size() * sizeof(float));
  const std::string mode = cfg_["parallel"]["mode"].get<std::string>();
  // Bytes each rank sends per step: the allreduce's bus factor x buffer (nccl-tests' busbw convention),
  // divided by H for local SGD; an asynchronous worker pushes a gradient and pulls the weights.
  if (mode == "async") {
    r.bytes_communicated_per_step = 2 * buffer_bytes;
  } else {
    const double factor = reducer_->bus_factor(ranks_);
    r.bytes_communicated_per_step =
        mode == "sync" ? buffer_bytes * factor
                       : buffer_bytes * factor / static_cast<double>(cfg_["parallel"]["local_steps"].get<int64_t>());
  }
  r.curve = st_.curve;
  r.target_accuracy = cfg_["eval"]["target_accuracy"].get<double>();
  r.time_to_accuracy = st_.tta;
  r.extra["per_rank_timing"] = per_rank;
  r.extra["steps_per_epoch"] = steps_per_epoch_;
  r.extra["total_steps"] = total_steps_;
  r.extra["parameters"] = model_->params().size();
  r.extra["flops_per_sample_train"] = model_->flops_per_sample_train();
  r.extra["achieved_gflops"] =
      st_.sum.total > 0 ? model_->flops_per_sample_train() * static_cast<double>(per_rank_ * st_.timed_steps) /
                              st_.sum.total / 1e9
                        : 0.0;
  r.extra["bytes_allreduced_per_step"] = mode == "sync" ? buffer_bytes : 0.0;
  if (buckets_) r.extra["buckets"] = buckets_->count();
  r.extra["exposed_comm_share"] = mean.total > 0 ? mean.exposed_comm / mean.total : 0.0;
  if (st_.split_steps > 0) {
    r.extra["exposed_comm_split"] = {
        {"unit", "seconds per step (mean over ranks)"},
        {"waiting_for_slowest_backward", wait_slowest},
        {"after_last_backward", after_last},
        {"note", "exposed_comm = waiting until the slowest rank's backward ended (imbalance) + communication "
                 "after it (not hidden by overlap); all ranks on one host, one clock"}};
  }
  if (!st_.preemptions.empty()) r.extra["preemptions"] = st_.preemptions;
  if (!asynchronous_.is_null()) r.extra["async"] = asynchronous_;
  if (!args_.baseline.empty()) {
    std::ifstream in(args_.baseline);
    Json base = Json::parse(in, nullptr, false);
    if (base.is_discarded() || !base.contains("throughput"))
      throw BadInput(args_.baseline + ": not a dtbench run record (--baseline)");
    double one = base["throughput"]["images_per_second"].get<double>() / base["ranks"].get<double>();
    r.extra["baseline_record"] = args_.baseline;
    r.extra["scaling_efficiency"] = one > 0 ? r.images_per_second / (ranks_ * one) : 0.0;
  }
  // A preempted record is replaced by its own continuation; any other record is never overwritten.
  bool replace = args_.resume && fs::exists(record_path_);
  if (replace) {
    std::ifstream in(record_path_);
    Json old = Json::parse(in, nullptr, false);
    replace = !old.is_discarded() && old.value("status", "") == "preempted";
  }
  write_json_atomic(record_path_, r.to_json(), !replace);
}

void Run::progress(int64_t step) {
  if (rank_ != 0 || !is_tty()) return;
  double now = now_seconds();
  if (now - last_progress_ < 0.5) return;
  last_progress_ = now;
  std::printf("\r\033[Kstep %lld/%lld (%.0f%%) img/s %.0f", static_cast<long long>(step),
              static_cast<long long>(total_steps_), 100.0 * static_cast<double>(step) / static_cast<double>(total_steps_),
              st_.sum.total > 0 ? static_cast<double>(global_ * st_.timed_steps) / st_.sum.total : 0.0);
  std::fflush(stdout);
}

void Run::inject_fault(int64_t done) {
  const std::string& f = args_.inject_fault;
  if (f.empty()) return;
  long long step = -1;
  int victim = -1;
  if (std::sscanf(f.c_str(), "sigusr1@%lld", &step) == 1) {
    if (rank_ == 0 && done == step) std::raise(SIGUSR1);
  } else if (std::sscanf(f.c_str(), "kill@%d:%lld", &victim, &step) == 2) {
    if (rank_ == victim && done == step) std::raise(SIGKILL);
  } else {
    throw BadInput("--inject-fault: expected sigusr1@STEP or kill@RANK:STEP, got \"" + f + "\"");
  }
}

void Run::save_weights() {
  if (args_.save_weights.empty() || rank_ != 0) return;
  auto p = model_->host_params();
  std::string bytes(reinterpret_cast<const char*>(p.data()), p.size() * sizeof(float));
  auto b = model_->host_buffers();
  bytes.append(reinterpret_cast<const char*>(b.data()), b.size() * sizeof(float));
  write_file_atomic(args_.save_weights, bytes, false);
}

int Run::execute() {
  setup_paths();
  if (rank_ == 0) log_ = std::make_unique<mllog::Logger>(mllog_path_.string(), args_.mllog_stdout);
  if (log_) log_->start(mllog::kInitStart);
  setup_data();
  setup_model();
  setup_parallel();
  try_resume();
  started_utc_ = utc_timestamp();
  if (log_) {
    log_->point(mllog::kSubmissionBenchmark, cfg_["model"]["arch"]);
    log_->point(mllog::kSeed, cfg_["seed"]);
    log_->point(mllog::kGlobalBatchSize, global_);
    log_->point(mllog::kOptName, cfg_["optimizer"]["name"]);
    log_->point(mllog::kOptBaseLearningRate, sched_->peak_lr());
    log_->point(mllog::kTrainSamples, static_cast<int64_t>(data_.train.size()));
    log_->point(mllog::kEvalSamples, static_cast<int64_t>(data_.test.size()));
    log_->end(mllog::kInitStop);
    log_->start(mllog::kRunStart);
  }
  if (rank_ == 0)
    std::printf("dtbench train: %s on %d rank(s), global batch %ld (%ld per rank), %lld steps (%lld per epoch)%s\n",
                cfg_["name"].get<std::string>().c_str(), ranks_, global_, per_rank_,
                static_cast<long long>(total_steps_), static_cast<long long>(steps_per_epoch_),
                st_.step > 0 ? (", resumed at step " + std::to_string(st_.step)).c_str() : "");
  std::signal(SIGUSR1, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  MPI_Barrier(world_);
  run_start_ = now_seconds() - st_.elapsed;

  const int64_t every_steps = cfg_["eval"]["every_steps"].get<int64_t>();
  const int64_t every_epochs = cfg_["eval"]["every_epochs"].get<int64_t>();
  const bool stop_at_target = cfg_["eval"]["stop_at_target"].get<bool>();
  RunStatus status = RunStatus::completed;
  std::string detail;
  if (cfg_["parallel"]["mode"] == "async") {
    status = run_async(detail);
    st_.elapsed = now_seconds() - run_start_;
  } else try {
    for (int64_t step = st_.step; step < total_steps_; ++step) {
      const int64_t epoch = step / steps_per_epoch_;
      if (log_ && step % steps_per_epoch_ == 0) log_->start(mllog::kEpochStart, nullptr, {{"epoch_num", epoch}});
      train_step(step);
      const int64_t done = step + 1;
      inject_fault(done);
      const bool epoch_end = done % steps_per_epoch_ == 0;
      if (log_ && epoch_end) log_->end(mllog::kEpochStop, nullptr, {{"epoch_num", epoch}});
      bool eval = done == total_steps_ || (every_steps > 0 && done % every_steps == 0) ||
                  (every_epochs > 0 && epoch_end && (epoch + 1) % every_epochs == 0);
      if (eval) {
        evaluate(done, static_cast<double>(done) / static_cast<double>(steps_per_epoch_), false);
        if (stop_at_target && st_.tta) break;
      } else {
        progress(done);
      }
      if (stop_requested_ && done < total_steps_) {
        st_.elapsed = now_seconds() - run_start_;
        st_.preemptions.push_back({{"signal", stop_signal_}, {"at_step", done}, {"utc", utc_timestamp()}});
        checkpoint(done);
        write_record(RunStatus::preempted, "stopped by a signal at step " + std::to_string(done) +
                                               "; resume with dtbench train --resume");
        if (rank_ == 0) std::printf("preempted at step %lld: checkpoint %s\n", static_cast<long long>(done), ckpt_dir_.c_str());
        MPI_Barrier(world_);  // leave together: no rank exits (and gets its peers killed) before the record exists
        return kExitPreempted;
      }
    }
  } catch (const Diverged& d) {
    status = RunStatus::diverged;
    detail = d.what();
    st_.step = d.step;
    if (rank_ == 0) std::printf("diverged: %s\n", d.what());
  }
  if (status == RunStatus::completed && st_.tta) status = RunStatus::reached_target;
  if (log_) log_->end(mllog::kRunStop, nullptr, {{"status", status == RunStatus::diverged ? mllog::kStatusAborted : mllog::kStatusSuccess}});
  write_record(status, detail);
  save_weights();
  if (rank_ == 0) {
    std::printf("record: %s (status %s)\n", record_path_.c_str(), to_string(status).c_str());
    std::error_code ec;
    fs::remove_all(ckpt_dir_, ec);  // the run is over: its checkpoint is no longer needed
  }
  MPI_Barrier(world_);
  return 0;
}

// Asynchronous SGD (async_ps.hpp): every rank is a worker; rank 0 also runs the server thread. Each
// worker runs its share of the steps (the same shards as synchronous training); rank 0 evaluates.
RunStatus Run::run_async(std::string& detail) {
  MPI_Comm ps;
  MPI_Comm_dup(world_, &ps);
  std::unique_ptr<AsyncServer> server;
  std::thread server_thread;
  std::exception_ptr server_error;
  if (rank_ == 0) {
    server = std::make_unique<AsyncServer>(ps, model_->params(), *model_->host_optimizer(), *sched_, total_steps_ * ranks_);
    server_thread = std::thread([&] {
      try {
        server->run();
      } catch (...) {
        server_error = std::current_exception();
      }
    });
  }
  AsyncWorker worker(ps);
  const int64_t every_steps = cfg_["eval"]["every_steps"].get<int64_t>();
  const int64_t every_epochs = cfg_["eval"]["every_epochs"].get<int64_t>();
  const double updates_per_epoch = static_cast<double>(steps_per_epoch_ * ranks_);
  const bool stop_at_target = cfg_["eval"]["stop_at_target"].get<bool>();
  int64_t version = 0;
  bool stopped = false, diverged = false;
  for (int64_t step = 0; step < total_steps_; ++step) {
    if (g_stop_signal.load()) {
      stopped = true;
      worker.leave();
      break;
    }
    const int64_t epoch = step / steps_per_epoch_;
    // Epoch events follow rank 0's worker: other workers may be a little ahead or behind.
    if (log_ && step % steps_per_epoch_ == 0) log_->start(mllog::kEpochStart, nullptr, {{"epoch_num", epoch}});
    StepTiming t;
    Stopwatch total, phase;
    auto idx = sharder_->indices(static_cast<uint64_t>(epoch), static_cast<size_t>(step % steps_per_epoch_), rank_);
    train_maker_->make(data_.train, idx, static_cast<uint64_t>(epoch), x_.data(), y_.data());
    t.data = phase.seconds();
    phase.reset();
    double loss = model_->forward(x_.data(), y_.data(), static_cast<int>(per_rank_), true);
    t.forward = phase.seconds();
    phase.reset();
    model_->backward({});
    t.backward = phase.seconds();
    phase.reset();
    const AsyncReply reply = worker.push_pull(model_->grads(), model_->params(), version, version);
    t.exposed_comm = t.comm = phase.seconds();
    t.total = total.seconds();
    st_.sum.data += t.data, st_.sum.forward += t.forward, st_.sum.backward += t.backward;
    st_.sum.exposed_comm += t.exposed_comm, st_.sum.comm += t.comm, st_.sum.total += t.total;
    st_.timed_steps++;
    st_.train_loss_sum += loss;
    st_.train_loss_steps++;
    st_.step = step + 1;
    if (reply != AsyncReply::go_on) {
      diverged = reply == AsyncReply::diverged;
      if (step + 1 < total_steps_) worker.leave();
      break;
    }
    const int64_t done = step + 1;
    if (log_ && done % steps_per_epoch_ == 0) log_->end(mllog::kEpochStop, nullptr, {{"epoch_num", epoch}});
    bool eval = done == total_steps_ || (every_steps > 0 && done % every_steps == 0) ||
                (every_epochs > 0 && done % steps_per_epoch_ == 0 && (epoch + 1) % every_epochs == 0);
    if (rank_ == 0 && eval) {
      evaluate(version / ranks_, static_cast<double>(version) / updates_per_epoch, true);
      if (stop_at_target && st_.tta) server->request_finish();  // the workers stop at their next push
    } else {
      progress(done);
    }
  }
  if (server_thread.joinable()) server_thread.join();
  MPI_Comm_free(&ps);
  if (server_error) std::rethrow_exception(server_error);
  // Throughput over all ranks: every worker processed per_rank_ images per step in parallel.
  if (rank_ == 0) {
    const AsyncStats& s = server->stats();
    asynchronous_ = s.to_json();
    if (s.diverged) diverged = true, detail = s.diverged_detail;
  }
  int flags[2] = {diverged ? 1 : 0, stopped ? 1 : 0};
  MPI_Allreduce(MPI_IN_PLACE, flags, 2, MPI_INT, MPI_MAX, world_);
  if (flags[0]) return RunStatus::diverged;
  if (flags[1]) {
    detail = "stopped by a signal; asynchronous runs are not checkpointed, so this run cannot be resumed";
    return RunStatus::preempted;
  }
  return st_.tta ? RunStatus::reached_target : RunStatus::completed;
}

// ---------------------------------------------------------------------------------------------

int train(const TrainArgs& args) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // The config phase reads the same files on every rank, so its errors are the same everywhere.
  std::unique_ptr<Run> run;
  try {
    Json user = config::read_user(args.config, args.sets);  // the file is read once
    run = std::make_unique<Run>(args, user);  // resolves and validates on this run's rank count
  } catch (const Error& e) {
    std::string msg = e.what();
    if (!args.config.empty() && msg.rfind(args.config, 0) != 0) msg = args.config + ": " + msg;
    throw SameOnAllRanks(e.code(), msg);
  }
  if (args.print_config) {
    if (rank == 0) std::cout << run->config().dump(2) << "\n";
    return 0;
  }
  return run->execute();
}

}  // namespace dtbench
