// One run of `dtbench train` (trainer.hpp): set-up, the loop, and how it ends. Each responsibility is in
// its own file: where the run writes (run_paths), its data (training_data), model (model_setup), how ranks
// combine their work (data_parallel), one synchronous step (sync_step), the asynchronous loop
// (async_loop), evaluation, the console, checkpoints (run_checkpoint) and the record (record_writer).
#include "workloads/train/trainer.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

#include "core/atomic_file.hpp"
#include "config/rules.hpp"
#include "config/run_config.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/mlperf.hpp"
#include "core/provenance.hpp"
#include "core/run_record.hpp"
#include "core/timer.hpp"
#include "core/trace.hpp"
#include "optim/schedule.hpp"
#include "workloads/train/async_loop.hpp"
#include "workloads/train/async_ps.hpp"
#include "workloads/train/cadence.hpp"
#include "core/checkpoint_files.hpp"
#include "core/crc32.hpp"
#include "workloads/train/console.hpp"
#include "workloads/train/data_parallel.hpp"
#include "workloads/train/evaluation.hpp"
#include "workloads/train/fault_injection.hpp"
#include "workloads/train/mllog.hpp"
#include "workloads/train/mllog_keys.hpp"
#include "workloads/models/model_description.hpp"
#include "workloads/models/pipeline_units.hpp"
#include "workloads/train/model_parallel.hpp"
#include "workloads/train/model_setup.hpp"
#include "workloads/train/pipeline.hpp"
#include "workloads/train/record_writer.hpp"
#include "workloads/train/run_checkpoint.hpp"
#include "workloads/train/run_paths.hpp"
#include "workloads/train/run_state.hpp"
#include "workloads/train/stop_signal.hpp"
#include "workloads/train/sync_step.hpp"
#include "workloads/train/training_data.hpp"
#include "workloads/train/world.hpp"

namespace dtbench {
namespace fs = std::filesystem;

class Run {
 public:
  Run(const TrainArgs& args, ResolvedRun resolved);
  int execute();
  const Json& config() const { return cfg_; }

 private:
  void set_up();
  void agree_on_data_shape();
  void check_outputs_and_open_log();
  void log_init_stop();
  // The synchronous (or local SGD) loop; returns the step at which a stop signal ended it, if one did.
  std::optional<int64_t> train_sync(RunStatus& status, std::string& detail);
  // `may_reach_target`: false for the evaluation of a run that diverged (its model is no trained one).
  void evaluate(int64_t steps_done, double epoch, bool solo, bool may_reach_target = true, bool new_point = true);
  void check_curve_of_checkpoint() const;
  int preempt(int64_t done);
  int finish(RunStatus status, const std::string& detail);
  void write_record(RunStatus status, const std::string& detail);
  bool saves_weights() const { return !args_.save_weights.empty() || !paths_.weights.empty(); }
  void save_weights();
  void cut_pipeline();
  std::vector<double> kept_unit_seconds(int units) const;
  std::vector<double> measure_unit_seconds(const models::ModelSpec& whole, int units, int stages) const;
  std::string write_trace() const;
  void agree_on_trace(const std::string& failed, bool preempted) const;
  bool asynchronous() const { return cfg_["parallel"]["mode"] == "async"; }

  TrainArgs args_;
  World world_;
  Json cfg_;
  long per_rank_ = 0, global_ = 0;
  FaultInjection fault_{""};
  RunPaths paths_;
  std::unique_ptr<mllog::Logger> log_;  // rank 0 only
  std::unique_ptr<TrainingData> data_;
  std::unique_ptr<TrainModel> model_;   // with its optimizer; cpu or gpu (train_model.hpp)
  std::unique_ptr<optim::Schedule> sched_;
  std::unique_ptr<DataParallel> parallel_;  // null for asynchronous SGD
  std::unique_ptr<ModelParallel> model_parallel_;  // null without model parallelism (tensor or pipeline)
  std::unique_ptr<Pipeline> pipeline_;             // null without pipeline stages
  std::vector<double> unit_seconds_;               // pipeline: the measured unit costs the stages were cut by
  int64_t attempt_first_step_ = 0;  // the step this attempt started at (after a resume, the checkpoint's)
  Cadence cadence_;
  std::unique_ptr<Console> console_;
  TrainState st_;  // everything a checkpoint carries besides the buffers
  bool resumed_ = false;
  bool replace_weights_ = false;  // rank 0: /output/save_weights' file is a failed attempt's (weights_left_over)
  std::string weights_crc32_;  // rank 0: the CRC-32 of the weights file save_weights wrote (extra.weights.crc32)
  size_t weights_floats_ = 0;  // rank 0: the floats it wrote (extra.weights.floats)
  std::string platform_;  // rank 0: MLLOG's submission_platform, made before the ranks meet to start
  std::optional<Baseline> baseline_;  // rank 0
  Json asynchronous_stats_;
  Json placement_;  // placement(): the ranks' fewest and most compute threads and their nodes, set in set_up
  Json data_shape_;  // the data's image counts, channels, height, width and classes (every rank's), for the checkpoints
  double run_start_ = 0;  // now_seconds() at run start, shifted back by the time spent before a resume
  std::string started_utc_;
};

namespace {

// Reads the user's config and resolves it on `ranks` ranks; an error names the file or the --set it came from.
ResolvedRun read_and_resolve(const TrainArgs& args, int ranks) try {
  // --print-config runs nothing: an option for a run beside it would be accepted unchecked and ignored (found by a
  // hunt: --stop-at past the end, a --trace folder that does not exist).
  if (args.print_config)
    for (const auto& [given, option] :
         {std::pair{args.resume, "--resume"}, {!args.init_from.empty(), "--init-from"}, {args.stop_at > 0, "--stop-at"},
          {!args.baseline.empty(), "--baseline"}, {args.mllog_stdout, "--mllog-stdout"},
          {!args.save_weights.empty(), "--save-weights"}, {!args.trace.empty(), "--trace"},
          {!args.inject_fault.empty(), "--inject-fault"}})
      if (given) throw BadInput(std::string("--print-config prints the resolved config and runs nothing: ") + option +
                                " is for a run");
  ResolvedRun r;
  r.cfg = config::resolve(config::read_user(args.config, args.sets), ranks);
  r.per_rank = config::per_rank_batch(r.cfg, ranks);
  r.global = config::global_batch(r.cfg, ranks);
  if (r.cfg["name"].get<std::string>().empty()) r.cfg["name"] = derived_run_name(r.cfg, ranks, r.global);
  config::check_rules(r.cfg, ranks, /*on_this_machine=*/true);  // the machine's rules (CUDA, devices)
  r.fault = FaultInjection(args.inject_fault);  // validated before any work
  const bool asynchronous = r.cfg["parallel"]["mode"] == "async";
  if (!args.init_from.empty() && asynchronous)
    throw BadInput("--init-from: asynchronous SGD keeps no checkpoint to start from (/parallel/mode \"async\")");
  if (args.stop_at > 0 && asynchronous)
    throw BadInput("--stop-at: asynchronous SGD runs to its end (/parallel/mode \"async\")");
  return r;
} catch (const Error& e) {
  throw Error(e.code(), config::attributed(e.what(), args.config, args.sets));  // the --set or the file
}

}  // namespace

Run::Run(const TrainArgs& args, ResolvedRun resolved)
    : args_(args), cfg_(std::move(resolved.cfg)), per_rank_(resolved.per_rank), global_(resolved.global),
      fault_(std::move(resolved.fault)) {}

// Data, model and schedule, how the ranks combine their work, and the checkpoint to resume from.
void Run::set_up() {
  // Threads first: oneDNN's primitives take the count when they are made. 0: OMP_NUM_THREADS when it is set, else
  // this rank's share of its host's CPUs (World::default_threads; a collective, so not in the constructor, which runs
  // before the ranks agreed that every one of them got that far).
  const int shared_out = world_.default_threads();
  if (const int64_t threads = cfg_["threads"].get<int64_t>(); threads > 0) {
    omp_set_num_threads(static_cast<int>(threads));
    // Said, not refused (a user may study it): each kernel waits for threads the scheduler has not run, so 3 steps of
    // ResNet-8 took 47 s at 128 threads on a 2-CPU machine and 0.5 s at 1 (a hunt saw 4096 as a hang).
    if (world_.root() && threads > 4 * static_cast<int64_t>(shared_out))
      std::fprintf(stderr,
                   "dtbench: warning: /threads %lld is more than 4 threads a CPU of this rank's share of its host's "
                   "CPUs (%d): oneDNN's kernels will run many times slower (threads 0 takes the share)\n",
                   static_cast<long long>(threads), shared_out);
  } else {
    // libgomp takes a list of positive counts ("4", "4,2") and ignores anything else with a warning, running all of
    // the host's CPUs on each rank (a hunt saw "abc" and "0" taken as set): such a value is no count, and the rank
    // takes its share, saying so. A count is the user's, said when it oversubscribes as /threads is.
    const char* env = std::getenv("OMP_NUM_THREADS");
    char* end = nullptr;
    const long long first = env != nullptr ? std::strtoll(env, &end, 10) : 0;
    const bool count = env != nullptr && end != env && first > 0 && (*end == '\0' || *end == ',');
    if (!count) omp_set_num_threads(shared_out);
    if (world_.root() && env != nullptr && *env != '\0' && !count)
      std::fprintf(stderr, "dtbench: warning: OMP_NUM_THREADS '%.40s' is not a thread count: each rank takes its share "
                   "of its host's CPUs (%d)\n", env, shared_out);
    else if (world_.root() && count && first > 4 * static_cast<long long>(shared_out))
      std::fprintf(stderr,
                   "dtbench: warning: OMP_NUM_THREADS %lld is more than 4 threads a CPU of this rank's share of its "
                   "host's CPUs (%d): oneDNN's kernels will run many times slower\n", first, shared_out);
  }
  placement_ = placement(world_);  // the ranks' thread counts and nodes, for the checkpoints
  // Every rank reads the same data files and config: their errors are the same everywhere.
  if (const int64_t m = cfg_["parallel"]["model_parallel"].get<int64_t>(); m > 1)
    model_parallel_ = std::make_unique<ModelParallel>(world_, static_cast<int>(m));
  if (const int64_t s = cfg_["parallel"]["pipeline_stages"].get<int64_t>(); s > 1)
    model_parallel_ = std::make_unique<ModelParallel>(world_, static_cast<int>(s), ModelParallel::Form::pipeline);
  // A model-parallel group's ranks read the same batches: the data is sharded over the replicas.
  const int replicas = model_parallel_ ? model_parallel_->replicas() : world_.size();
  const int replica = model_parallel_ ? model_parallel_->replica() : world_.rank();
  const int node_ranks = world_.ranks_on_this_host();
  if (cfg_["data"]["dataset"] == "synthetic")
    world_.on_every_rank([&] { check_synthetic_fits(cfg_, model_parallel_.get(), node_ranks); });
  data_ = world_.on_every_rank([&] { return std::make_unique<TrainingData>(cfg_, replicas, replica, per_rank_, node_ranks); });
  agree_on_data_shape();
  const int64_t steps_per_epoch = data_->steps_per_epoch();
  const int64_t total_steps = cfg_["duration"]["steps"].get<int64_t>() > 0
                                  ? cfg_["duration"]["steps"].get<int64_t>()
                                  : cfg_["duration"]["epochs"].get<int64_t>() * steps_per_epoch;
  world_.on_every_rank([&] {
    if (args_.stop_at > total_steps)
      throw BadInput("--stop-at " + std::to_string(args_.stop_at) + " is past the run's last step, " +
                     std::to_string(total_steps) + " (/duration)");
    config::check_local_sgd_phases(cfg_, steps_per_epoch, total_steps);
  });
  cadence_ = Cadence(cfg_["eval"], steps_per_epoch, total_steps, args_.stop_at);
  console_ = std::make_unique<Console>(world_.root(), total_steps);
  const bool pipelined = model_parallel_ && model_parallel_->form() == ModelParallel::Form::pipeline;
  if (pipelined) cut_pipeline();
  // Asynchronous SGD's rank 0 evaluates alone, the whole set; synchronous ranks each their share.
  const int64_t eval_batch = static_cast<int64_t>(asynchronous() ? data_->solo_eval_batch() : data_->eval_batch());
  model_ = make_train_model(cfg_, data_->train(), world_, model_parallel_.get(), node_ranks, eval_batch,
                            asynchronous() ? 1 : node_ranks);
  if (pipelined)
    pipeline_ = std::make_unique<Pipeline>(*model_parallel_, cfg_["parallel"]["pipeline_schedule"].get<std::string>(),
                                           static_cast<int>(cfg_["batch"]["micro_batches"].get<int64_t>()));
  sched_ = world_.on_every_rank([&] {
    return optim::make_schedule(cfg_["optimizer"], cfg_["lr_scaling"], cfg_["schedule"],
                                optim::RunShape{global_, steps_per_epoch, total_steps});
  });
  if (!asynchronous())
    parallel_ = std::make_unique<DataParallel>(cfg_, world_, *model_, per_rank_, global_, steps_per_epoch, total_steps,
                                               model_parallel_.get());
  else  // the servers' shards hold whole tensors: refused here, before any output, when there are too few
    world_.on_every_rank([&] {
      return shard_params(model_->host_optimizer()->table(), static_cast<int>(cfg_["reducer"]["servers"].get<int64_t>()));
    });
  std::optional<NoiseScaleEstimator> none;
  if (args_.resume)
    resumed_ = world_.on_every_rank([&] {
      return resume_from_checkpoint(world_, paths_.checkpoint, cfg_, *model_, *sched_,
                                    parallel_ ? parallel_->noise() : none, st_, placement_, data_shape_);
    });
  if (args_.resume) {
    // Each rank looked in its own view of /output/dir (a node's disk, a stale network file system cache): one that
    // found no checkpoint where another resumed would start at step 0 while that one went on, each waiting for the
    // other at some later step.
    // Likewise one whose header names an older step (a stale copy). One reduction: the newest step any rank resumed
    // at, -1 when none did.
    const double newest = world_.max(resumed_ ? static_cast<double>(st_.step) : -1.0);
    std::optional<Error> err;
    if (newest >= 0 && !resumed_)
      err = BadInput(paths_.checkpoint.string() + ": --resume: no checkpoint here, where another rank found one " +
                     "(every rank must see the same /output/dir)");
    else if (resumed_ && static_cast<double>(st_.step) != newest)
      err = BadInput(paths_.checkpoint.string() + ": --resume: the checkpoint here is at step " +
                     std::to_string(st_.step) + ", another rank's at step " + std::to_string(static_cast<int64_t>(newest)) +
                     " (every rank must see the same /output/dir)");
    // A synchronous run checkpoints before it writes a `preempted` record (preempt()), so such a record without a
    // checkpoint here is a damaged one (found by a hunt: with header.json removed, the run started afresh, deleted
    // the rank files and replaced the record). An asynchronous run has none and runs again from the start.
    else if (newest < 0 && world_.root() && !asynchronous() && preempted_record(paths_.record))
      err = BadInput(paths_.checkpoint.string() + ": --resume: " + paths_.record.string() + " says this run was " +
                     "preempted, which a synchronous run does only once its checkpoint is whole, but there is no " +
                     "header.json here (a damaged checkpoint: restore it, or remove the record and this folder to " +
                     "train afresh)");
    else if (resumed_ && args_.stop_at > 0 && st_.step > args_.stop_at)  // as --init-from refuses it
      err = BadInput("--stop-at " + std::to_string(args_.stop_at) + ": the checkpoint " + paths_.checkpoint.string() +
                     " is at step " + std::to_string(st_.step) + " already: nothing would be trained (it is kept)");
    world_.agree_on_any_error(err);
    if (resumed_) agree_on_checkpoint(world_, paths_.checkpoint, "--resume");
  }
  // With --resume as well, --init-from is where a run starts that has no checkpoint of its own yet (a requeued
  // population-based training member continues its own).
  if (!resumed_ && !args_.init_from.empty()) {
    world_.on_every_rank([&] {
      init_from_checkpoint(world_, args_.init_from, cfg_, *model_, *sched_, parallel_ ? parallel_->noise() : none, st_,
                           cadence_.stop_step, data_shape_);
    });
    // Its path may differ between ranks (a node's disk): two checkpoints of one step hung the run, of another run
    // trained replicas from different weights, with exit 0.
    agree_on_checkpoint(world_, args_.init_from, "--init-from");
  }
  if (resumed_ || !args_.init_from.empty()) check_curve_of_checkpoint();
  // After the checkpoint is read (still before anything is written): the step it starts at decides which faults lie
  // behind the run.
  world_.on_every_rank([&] {
    const std::string mode = cfg_["parallel"]["mode"].get<std::string>();
    const int shards = model_parallel_ ? model_parallel_->group_size()
                       : mode == "local_sgd" || mode == "post_local_sgd" || mode == "async" ? world_.size()
                                                                                             : 1;
    fault_.check(world_.size(), shards, args_.stop_at > 0 ? args_.stop_at : cadence_.total_steps, mode == "async",
                 st_.step, resumed_);
  });
  if (pipeline_) st_.pipeline_unit_seconds = unit_seconds_;  // the next checkpoint's, as this run cut its stages
}

// The curve a checkpoint's header brought against this run: its global batch, its epoch length and its target (the
// header alone checks its order and steps): an edited point's samples or epoch, or a time to accuracy at a later
// point than the first at the target, went into the record as they were, which the record reader then refused
// (found by a hunt and a review). Every rank read the same header (agree_on_checkpoint): one check.
void Run::check_curve_of_checkpoint() const {
  const std::filesystem::path header =
      (resumed_ ? paths_.checkpoint : std::filesystem::path(args_.init_from)) / "header.json";
  std::optional<Error> err;
  try {
    check_curve(st_.curve, global_, cfg_["eval"]["target_accuracy"].get<double>(), st_.tta, "/state/curve",
                "/state/tta");
    for (size_t i = 0; i < st_.curve.size(); ++i) {
      const double epoch = cadence_.epochs(st_.curve[i].step);
      if (std::fabs(st_.curve[i].epoch - epoch) > 1e-9 * std::max(1.0, epoch))
        throw BadInput("/state/curve/" + std::to_string(i) + "/epoch: " + config::fmt_number(st_.curve[i].epoch) +
                       ", but step " + std::to_string(st_.curve[i].step) + " is epoch " + config::fmt_number(epoch) +
                       " of this run");
    }
  } catch (const BadInput& e) {
    err = BadInput(header.string() + ": " + e.what());
  }
  world_.agree_on_any_error(err);
}

// Every rank loaded its own copy of /data (from its node's disk): a copy of another size or shape would give the
// ranks different step counts or layers, and they would wait for one another. Each rank compares its copy with rank
// 0's, so the message names the first rank whose copy differs from it, or, when rank 0's is the odd one, rank 1
// saying how; then the files' content, by its CRC-32 (copies on each node's disk have the same).
void Run::agree_on_data_shape() {
  const data::Dataset& train = data_->train();
  const char* const names[] = {"training images", "test images", "validation images", "channels", "height",
                               "width", "classes"};
  // The whole test set: /eval/test_samples, which keeps its first N, may change across --init-from.
  const std::array<int, 7> mine{static_cast<int>(train.size()), static_cast<int>(data_->test_set_samples()),
                                static_cast<int>(data_->validation().size()), train.channels, train.height,
                                train.width, train.classes};
  std::array<int, 7> root;  // rank 0's, sent by a maximum to which the other ranks bring the least int
  root.fill(std::numeric_limits<int>::min());
  if (world_.root()) root = mine;
  world_.max(root);
  std::optional<Error> err;
  for (size_t i = 0; i < mine.size() && !err; ++i)
    if (mine[i] != root[i])
      err = BadInput("the data this rank loaded has " + std::to_string(mine[i]) + " " + names[i] + " where rank 0's " +
                     "has " + std::to_string(root[i]) + " (every rank must read the same /data)");
  world_.agree_on_any_error(err);
  data_shape_ = Json::object();
  for (size_t i = 0; i < mine.size(); ++i) data_shape_[names[i]] = mine[i];
  // Synthetic images are drawn from a seed, not read from files: the one they were drawn from is the data's identity
  // (a run continued --init-from with another /seed trained on another set; a hunt).
  if (cfg_["data"]["dataset"] == "synthetic") {
    const int64_t own = cfg_["data"]["synthetic"]["seed"].get<int64_t>();
    data_shape_["synthetic data seed"] = own >= 0 ? own : cfg_["seed"].get<int64_t>();
  } else {
    // Files are identified by what they hold: the training and validation images and labels as decoded (a run
    // resumed or continued on other files of the same shape, MNIST for Fashion-MNIST, trained on with exit 0; a
    // hunt). zlib's CRC-32 over Fashion-MNIST's 47 MB is a few hundredths of a second.
    uint32_t crc = 0;
    for (const data::Dataset* d : {&train, &data_->validation()}) {
      crc = crc32_of(reinterpret_cast<const char*>(d->images.data()), d->images.size(), crc);
      crc = crc32_of(reinterpret_cast<const char*>(d->labels.data()), d->labels.size() * sizeof(int32_t), crc);
    }
    data_shape_["training data crc32"] = crc32_hex(crc);
    // Ranks that read other files of one shape trained and checkpointed with exit 0, and the checkpoint then
    // failed its own resume on the odd rank (a review).
    const std::string root_crc = world_.broadcast_text(crc32_hex(crc));
    if (root_crc != crc32_hex(crc))
      err = BadInput("the training images and labels this rank loaded have CRC-32 " + crc32_hex(crc) + " where rank "
                     "0's have " + root_crc + " (every rank must read the same /data: copies of the same files)");
    world_.agree_on_any_error(err);
  }
}

// Pipeline stages: the cut /parallel/pipeline_cut pins, or else the one where the costliest stage is cheapest
// (pipeline.hpp) by each unit's forward and backward seconds for one micro-batch: measured by the first pipeline's
// ranks, stage s timing the s-th of S runs of units of equal count, so that no rank builds more than its share of
// a model that may only fit in stages (the other replicas wait); or, when this run continues a checkpoint
// (--resume, --init-from), the seconds that run measured, so that every stage holds the same units as the
// checkpoint's.
void Run::cut_pipeline() {
  const models::ModelSpec whole = train_model_spec(cfg_, data_->train(), nullptr);
  world_.on_every_rank([&] { models::validate(whole); });
  const int units = models::pipeline_units(whole), stages = model_parallel_->group_size();
  std::vector<std::pair<int, int>> cut;
  const Json& pinned = cfg_["parallel"]["pipeline_cut"];
  if (!pinned.empty()) {  // nothing measured; the record shows no unit costs
    int first = 0;
    for (const Json& b : pinned) cut.emplace_back(first, b.get<int>()), first = b.get<int>();
    cut.emplace_back(first, units);
  } else {
    unit_seconds_ = kept_unit_seconds(units);
    if (unit_seconds_.empty()) unit_seconds_ = measure_unit_seconds(whole, units, stages);
    // A unit too fast to time still counts, so that no stage is cut empty of work by a zero.
    std::vector<double> weights(unit_seconds_);
    for (double& w : weights) w = std::max(w, 1e-9);
    for (int s = 0; s < stages; ++s) cut.push_back(stage_units(weights, stages, s));
  }
  model_parallel_->set_stage_units(std::move(cut));
}

// The unit costs the checkpoint this run continues (--resume, --init-from) kept, read by rank 0 and sent to every
// rank; empty when there is none or it kept none for `units` units.
std::vector<double> Run::kept_unit_seconds(int units) const {
  const fs::path continued = args_.resume ? paths_.checkpoint : fs::path(args_.init_from);
  if (continued.empty()) return {};
  std::vector<float> kept(static_cast<size_t>(units) + 1, 0.0f);  // the flag after the costs: the checkpoint had them
  world_.checked_on_root([&] {
    const Json header = read_header(continued);
    const Json* state = header.is_object() && header.contains("state") ? &header["state"] : nullptr;
    if (state == nullptr || !state->contains("pipeline_unit_seconds")) return;
    // A list of one cost per unit, or not the costs of this cut (an object of as many keys was an internal error).
    if (!(*state)["pipeline_unit_seconds"].is_array())
      throw BadInput((continued / "header.json").string() + ": damaged checkpoint header: /state/pipeline_unit_seconds: " +
                     "expected a list of the units' seconds, got " + (*state)["pipeline_unit_seconds"].dump().substr(0, 40));
    if ((*state)["pipeline_unit_seconds"].size() != static_cast<size_t>(units)) return;
    // Read before the header's state is checked (TrainState::from_json): a null or text here was an internal error,
    // 1e300 an infinite cost (a hunt). A unit's seconds for one micro-batch: a finite number, at most an hour.
    for (int u = 0; u < units; ++u) {
      const Json& v = (*state)["pipeline_unit_seconds"][size_t(u)];
      if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 3600))
        throw BadInput((continued / "header.json").string() + ": damaged checkpoint header: /state/pipeline_unit_seconds/" +
                       std::to_string(u) + ": expected a unit's seconds in [0, 3600], got " + v.dump().substr(0, 40));
      kept[size_t(u)] = v.get<float>();
    }
    kept.back() = 1;
  });
  world_.broadcast(kept);
  if (kept.back() != 1) return {};
  return std::vector<double>(kept.begin(), kept.end() - 1);
}

// Each unit's seconds for one micro-batch, measured by the first pipeline's ranks: rank s (its stage s) times the
// s-th of `stages` runs of units of equal count, plain forward and backward (no checkpoint segments, whose
// recomputation would land on the unit ending a segment of this measuring layout, not of the run's), and every rank
// learns them all. Any failure while measuring is agreed on by every rank, so that no stage is left waiting.
std::vector<double> Run::measure_unit_seconds(const models::ModelSpec& whole, int units, int stages) const {
  int micro = static_cast<int>(per_rank_ / cfg_["batch"]["micro_batches"].get<int64_t>());
  // With synchronised batch norm the run normalises over the replicas' micro-batches together; the model timed here
  // is not synchronised, and one image of a 1x1 map was refused by its batch norm, exit 2 for a run that trains
  // with a pinned cut (a hunt). Two images, the least a normalisation takes, for the timing alone.
  if (micro == 1 && cfg_["parallel"]["sync_bn"].get<bool>() && model_parallel_->replicas() > 1) micro = 2;
  std::vector<double> measured(static_cast<size_t>(units), 0.0);
  std::optional<Error> err;
  if (world_.rank() < stages) {
    const models::RowRange mine = models::shard_rows(units, stages, world_.rank());
    models::ModelSpec part = whole;
    part.checkpoint_segments = 0;
    part.stages = stages, part.stage = world_.rank();
    part.first_unit = static_cast<int>(mine.begin), part.end_unit = static_cast<int>(mine.end);
    try {
      const std::vector<double> s =
          measure_cpu_unit_seconds(part, micro, 3, static_cast<uint64_t>(cfg_["seed"].get<int64_t>()));
      for (int64_t u = mine.begin; u < mine.end && u < static_cast<int64_t>(s.size()); ++u)
        measured[size_t(u)] = s[size_t(u)];
    } catch (const Error& e) {
      err = e;
    } catch (const std::exception& e) {
      err = RunFailed(std::string("measuring the pipeline units' costs: ") + e.what());
    }
  }
  world_.agree_on_any_error(err);
  world_.sum(measured);  // each unit timed by one rank, 0 elsewhere
  // As floats, the precision a checkpoint keeps them in, so that a resumed run cuts from the same values.
  for (double& t : measured) t = static_cast<double>(static_cast<float>(t));
  return measured;
}

// Every input is valid by now (config, data, model, checkpoint); rank 0 reads --baseline and proves each
// output writable before the first byte is written. Then the MLLOG file takes the events logged so far.
void Run::check_outputs_and_open_log() {
  // The other ranks write their checkpoint files under their own /output/dir (a node's disk may differ from rank
  // 0's): one they cannot write failed the run at its first checkpoint, after training and rank 0's MLLOG file.
  std::optional<Error> err;
  if (!world_.root() && !asynchronous()) {
    try {
      const fs::path& ckpt = paths_.checkpoint;
      check_output_folder(ckpt.has_parent_path() ? ckpt.parent_path() : fs::path("."), "/output/dir");
      check_output_kind(ckpt, fs::file_type::directory);
    } catch (const Error& e) {
      err = e;
    }
  }
  world_.agree_on_any_error(err);
  world_.checked_on_root([this] {
    if (!args_.baseline.empty()) baseline_ = read_baseline(args_.baseline, cfg_);
    replace_weights_ = weights_left_over(paths_, args_.resume);
    // --resume replaces a preempted record (a run without a checkpoint, as an asynchronous one, runs again from the
    // start); any other record there, a finished run's or a file that is not a record, refuses the run before it
    // writes anything (a finished run that kept its checkpoint resumed at its end, rewrote its checkpoint and MLLOG
    // file, and only then found its record there).
    const bool replaces_record = args_.resume && preempted_record(paths_.record);
    // A record there that cannot be read is said as such: "exists already; choose another /name" sent the user of a
    // run whose checkpoint was whole to rename it, where the record was cut (found by a hunt).
    std::error_code ec;
    if (args_.resume && !replaces_record && fs::is_regular_file(fs::symlink_status(paths_.record, ec)))
      if (const RecordFile old = read_run_record(paths_.record); !old.record && !old.other_kind)
        throw BadInput(old.problem + " (the run's record, which --resume replaces only when it says preempted, cannot "
                       "be read: restore it, or move it away and run again)");
    std::vector<std::pair<std::string, std::string>> inputs = {
        {"the config file", args_.config}, {"--baseline", args_.baseline}, {"--init-from", args_.init_from}};
    // And the data set's files (--save-weights over a label file replaced it; found by a hunt).
    for (const fs::path& f : data_->files()) inputs.emplace_back("a file of the data set (/data/path)", f.string());
    check_outputs(paths_, replaces_record, replace_weights_, args_.save_weights, args_.trace, inputs);
    if (resumed_) log_->discard_pending();  // its init_start: the first attempt logged one
    log_->open(paths_.mllog.string(), resumed_, resumed_ ? st_.mllog_bytes : -1,
               (paths_.checkpoint / "header.json").string());
    if (st_.mllog_timed_run_end_ms >= 0) log_->end_timed_run(st_.mllog_timed_run_end_ms);  // resumed past its target
  });
}

// The run's description, then init_stop and run_start, in the order MLPerf's compliance rules (training
// 4.0.0, common and open) require: the submission_* events before init_stop, exactly one each. A resumed run
// appends to the log of its first attempt, which has them already: it logs only where it resumed, so the
// file stays one init, one run_start and one run_stop.
void Run::log_init_stop() {
  if (!log_) return;
  if (resumed_) {
    // MLPerf's time (run_stop's less run_start's) spans the time the run was stopped; elapsed_ms is the run's own
    // time since its run_start before this attempt, so that a reader can take the downtime out (the record's times
    // leave it out). Not what a run started --init-from took over: its log starts with its own run_start.
    log_->point(mllog::kResume, st_.step,
                {{mllog::kEpochNum, cadence_.epochs(st_.step)},
                 {"elapsed_ms", static_cast<int64_t>(std::llround((st_.elapsed - st_.inherited_elapsed) * 1000))}});
    // Resumed within an epoch: its epoch_start is in the first attempt's part of the log.
    if (!cadence_.starts_epoch(st_.step))
      log_->mark_open(mllog::kEpochStart, {{mllog::kEpochNum, cadence_.epoch_of(st_.step)}});
    return;
  }
  const Json& ml = cfg_["mllog"];
  log_->point(mllog::kSubmissionOrg, ml["submission_org"]);
  log_->point(mllog::kSubmissionPlatform, platform_);
  log_->point(mllog::kSubmissionDivision, ml["submission_division"]);
  log_->point(mllog::kSubmissionStatus, ml["submission_status"]);
  log_->point(mllog::kSubmissionBenchmark, mlperf_benchmark(cfg_));
  log_->point(mllog::kModelArch, cfg_["model"]["arch"]);
  log_->point(mllog::kDataset, cfg_["data"]["dataset"]);
  log_->point(mllog::kTargetAccuracy, cfg_["eval"]["target_accuracy"]);
  log_->point(mllog::kCacheClear, ml["cache_clear"]);
  log_->point(mllog::kSeed, cfg_["seed"]);
  log_->point(mllog::kGlobalBatchSize, global_);
  log_->point(mllog::kOptName, cfg_["optimizer"]["name"]);
  log_->point(mllog::kOptBaseLearningRate, sched_->peak_lr());
  // MLPerf's ResNet rules name the warmup in epochs (a fraction when it is given in steps).
  log_->point(mllog::kOptWarmupEpochs,
              static_cast<double>(sched_->warmup().steps) / static_cast<double>(data_->steps_per_epoch()));
  log_->point(mllog::kTrainSamples, static_cast<int64_t>(data_->train().size()));
  log_->point(mllog::kEvalSamples, static_cast<int64_t>(data_->test().size()));
  log_->end(mllog::kInitStop);
  log_->start(mllog::kRunStart);
  // A run started --init-from a checkpoint within an epoch: its file has no epoch_start for that epoch yet.
  if (!cadence_.starts_epoch(st_.step))
    log_->start(mllog::kEpochStart, nullptr, {{mllog::kEpochNum, cadence_.epoch_of(st_.step)}});
}

int Run::execute() {
  // A stop signal from here on is a preemption (checkpoint, exit 3), never the default action that kills this
  // rank alone; and run_start is logged only after every rank has passed the barrier, so that whoever sees it
  // (a scheduler's script, the tests) may signal the job: a rank still setting up would otherwise die of it.
  install_stop_signal_handlers();
  if (world_.root()) log_ = std::make_unique<mllog::Logger>(args_.mllog_stdout);
  if (log_) log_->start(mllog::kInitStart);
  paths_ = run_paths(cfg_);
  set_up();
  attempt_first_step_ = st_.step;
  check_outputs_and_open_log();
  started_utc_ = utc_timestamp();
  // The provenance it names takes up to 0.1 s (the CPU, MPI and CUDA queried): taken after the barrier, rank 0
  // started its clock and run_start that much after the others had begun their first steps (a hunt).
  if (log_ && !resumed_) platform_ = mlperf_platform(cfg_, world_.size(), provenance());
  fault_.end_of_setup(world_.rank());
  world_.barrier();
  // One instant as every rank's time 0: each rank taking its own right after the barrier left them apart by the
  // time each took to leave it (5 ms on a loaded host, where a rank waited for a core).
  if (!args_.trace.empty()) {
    const World::ClockAlignment clock = world_.trace_origin();
    trace::start(clock.origin, {{"same_host_as_rank_0", clock.same_host_as_root},
                                {"offset_from_rank_0_us", clock.offset_us}, {"uncertainty_us", clock.uncertainty_us}});
  }
  log_init_stop();
  console_->start(cfg_["name"].get<std::string>(), world_.size(), global_, per_rank_, cadence_.steps_per_epoch,
                  st_.step);
  run_start_ = now_seconds() - st_.elapsed;

  RunStatus status = RunStatus::completed;
  std::string detail;
  if (asynchronous()) {
    AsyncOutcome out = run_async_sgd(
        world_, *model_, *sched_, *data_, cadence_, per_rank_, cfg_["eval"]["stop_at_target"].get<bool>(),
        cfg_["parallel"]["bounded_staleness"].get<bool>() ? cfg_["parallel"]["staleness_bound"].get<int64_t>() : -1,
        static_cast<int>(cfg_["reducer"]["servers"].get<int64_t>()),
        static_cast<int>(cfg_["reducer"]["poll_us"].get<int64_t>()), cfg_["optimizer"],
        static_cast<uint64_t>(cfg_["seed"].get<int64_t>()), st_,
        log_.get(), &fault_, [this](int64_t done, double epoch) { evaluate(done, epoch, true); },
        [this](int64_t done) { console_->progress(done, st_.images_per_second(global_)); });
    status = out.status, detail = out.detail, asynchronous_stats_ = out.stats;
    st_.elapsed = now_seconds() - run_start_;
  } else if (std::optional<int64_t> stopped_at = train_sync(status, detail)) {
    return preempt(*stopped_at);
  } else {
    st_.elapsed = now_seconds() - run_start_;  // a kept checkpoint carries it on (--init-from)
    if (status == RunStatus::completed && cadence_.stop_step < cadence_.total_steps && st_.step == cadence_.stop_step)
      detail = "stopped at step " + std::to_string(cadence_.stop_step) + " of " +
               std::to_string(cadence_.total_steps) + " (--stop-at)";
  }
  return finish(status, detail);
}

std::optional<int64_t> Run::train_sync(RunStatus& status, std::string& detail) {
  SyncStep step_runner(world_, *model_, *data_, *parallel_, *sched_, per_rank_,
                       static_cast<int>(cfg_["batch"]["micro_batches"].get<int64_t>()), cadence_.total_steps);
  step_runner.set_fault(&fault_);
  step_runner.set_pipeline(pipeline_.get());
  const bool stop_at_target = cfg_["eval"]["stop_at_target"].get<bool>();
  const double target = cfg_["eval"]["target_accuracy"].get<double>();
  // Resumed at the step it stops at (a checkpoint preempted at step S, resumed with --stop-at S): no step is left,
  // and the evaluation --stop-at promises there is made here unless the checkpoint's curve has it.
  if (st_.step == cadence_.stop_step && (st_.curve.empty() || st_.curve.back().step < st_.step))
    evaluate(st_.step, cadence_.epochs(st_.step), false);
  try {
    for (int64_t step = st_.step; step < cadence_.stop_step; ++step) {
      const int64_t epoch = cadence_.epoch_of(step);
      if (log_ && cadence_.starts_epoch(step)) log_->start(mllog::kEpochStart, nullptr, {{mllog::kEpochNum, epoch}});
      step_runner.run(step, st_);
      const int64_t done = step + 1;
      fault_.after_step(done, world_.rank());
      if (log_ && cadence_.ends_epoch(done)) log_->end(mllog::kEpochStop, nullptr, {{mllog::kEpochNum, epoch}});
      if (cadence_.evaluates_after(done)) {
        evaluate(done, cadence_.epochs(done), false);
        // At this run's own evaluation at the target: a run continued --init-from one that had reached it (its time
        // to accuracy) stopped at its first evaluation, below the target, its log saying aborted (a hunt).
        if (stop_at_target && st_.tta && st_.curve.back().test_accuracy >= target) break;
      } else {
        console_->progress(done, st_.images_per_second(global_));
      }
      if (step_runner.stop_signal() && done < cadence_.stop_step) {
        st_.preemptions.push_back({{"signal", step_runner.stop_signal()}, {"at_step", done}, {"utc", utc_timestamp()}});
        return done;
      }
    }
  } catch (const Diverged& d) {
    status = RunStatus::diverged;
    detail = d.what();
    st_.step = d.step;
    console_->line(std::string("diverged: ") + d.what());
    // A run that diverged before its first evaluation is evaluated where it stopped (every rank agreed on the
    // divergence, so every rank is here): its curve and its MLLOG file hold the accuracy it ended with, which
    // MLPerf's rules require of every log (common.yaml: at least one eval_accuracy), rather than none.
    // A run continued --init-from another has that run's points, not in its own log: it counts its own (a
    // continuation that diverged before its first evaluation left a log without eval_accuracy; a hunt).
    // Its model is the diverged one (or, at step 0, the untrained one): that evaluation reaches no target (a run
    // that diverged at its first step was recorded as at its target at step 0, above its healthy twins; a hunt).
    // At the step of the curve's last point (a continuation that diverged at its first step), for its log only: the
    // record held that step twice (a hunt).
    if (st_.curve.size() <= static_cast<size_t>(st_.mllog_from_point))
      evaluate(d.step, cadence_.epochs(d.step), false, /*may_reach_target=*/false,
               /*new_point=*/st_.curve.empty() || st_.curve.back().step < d.step);
  }
  return std::nullopt;
}

// Evaluates on the test set, extends the curve and notes the time to accuracy. Synchronous runs in a
// local SGD phase evaluate the averaged model (Lin et al. 2018); synchronous runs with per-replica batch norm
// evaluate with the replicas' mean running statistics, one model's (DataParallel::average_buffers). Both then
// train on with their own, so that how often a run evaluates does not change what it trains. `new_point` false: for
// the MLLOG file only, the curve holding this step already.
void Run::evaluate(int64_t steps_done, double epoch, bool solo, bool may_reach_target, bool new_point) {
  trace::Span traced("evaluation", "evaluation");
  std::optional<std::vector<float>> own_statistics;
  std::optional<DataParallel::OwnModel> own_model;
  if (!solo) {
    if (parallel_->local_step(steps_done - 1))
      own_model = parallel_->average_for_evaluation(*model_, steps_done - 1);
    else
      own_statistics = parallel_->average_buffers(*model_);
  }
  if (log_) log_->start(mllog::kEvalStart, nullptr, {{mllog::kEpochNum, epoch}});
  const size_t eval_batch = static_cast<size_t>(cfg_["eval"]["batch"].get<int64_t>());
  if (model_parallel_) model_parallel_->set_evaluating(true);
  const EvalResult e = evaluate_set(*model_, *data_, EvalSet::test, world_, eval_batch, solo, pipeline_.get());
  EvalPoint p;
  p.epoch = epoch;
  p.step = steps_done;
  p.samples = steps_done * global_;
  p.wall_seconds = now_seconds() - run_start_;
  // The mean over the steps since the last evaluation; none since (asynchronous SGD's last evaluation on the
  // servers' final weights right after rank 0's own): that evaluation's; none at all (a run that diverged at its
  // first step): unknown, null in the record, not a perfect-looking 0.
  p.train_loss = st_.train_loss_steps ? st_.train_loss_sum / static_cast<double>(st_.train_loss_steps)
                 : st_.curve.empty()  ? std::numeric_limits<double>::quiet_NaN()
                                      : st_.curve.back().train_loss;
  p.test_loss = e.loss;
  p.test_accuracy = e.accuracy;
  if (data_->has_validation()) {
    const EvalResult v = evaluate_set(*model_, *data_, EvalSet::validation, world_, eval_batch, solo, pipeline_.get());
    p.validation_loss = v.loss;
    p.validation_accuracy = v.accuracy;
  }
  if (model_parallel_) model_parallel_->set_evaluating(false);
  if (own_statistics) DataParallel::restore_buffers(*model_, *own_statistics);
  if (own_model) DataParallel::restore_model(*model_, *own_model);
  p.lr = sched_->lr(std::max<int64_t>(steps_done - 1, 0));
  if (parallel_ && parallel_->noise()) p.b_simple = parallel_->noise()->b_simple();
  st_.train_loss_sum = 0;
  st_.train_loss_steps = 0;
  if (new_point) {
    st_.curve.push_back(p);
    sched_->observe(p);  // plateau watches the result its /schedule/metric names
  }

  const double target = cfg_["eval"]["target_accuracy"].get<double>();
  const bool reached = new_point && may_reach_target && target > 0 && p.test_accuracy >= target;
  if (reached && !st_.tta) st_.tta = TimeToAccuracy{p.wall_seconds, p.step, p.epoch, p.samples};
  if (log_) {
    log_->point(mllog::kEvalAccuracy, p.test_accuracy, {{mllog::kEpochNum, epoch}});
    log_->end(mllog::kEvalStop, nullptr, {{mllog::kEpochNum, epoch}});
    // MLPerf's timed run ends at this file's first evaluation at the target, whether or not the run trains on: the
    // open epoch closes, and the run_stop that finish() logs carries this time. Its own: a run started --init-from a
    // checkpoint whose curve reached the target already (st_.tta set) ends at its own first such evaluation.
    if (reached && st_.mllog_timed_run_end_ms < 0) {
      log_->end_open(mllog::kEpochStop);
      st_.mllog_timed_run_end_ms = log_->end_timed_run();
    }
  }
  console_->evaluation(p, st_.images_per_second(global_));
}

// A stop signal: checkpoint, a `preempted` record, and exit code 3 (resume with --resume).
int Run::preempt(int64_t done) {
  st_.elapsed = now_seconds() - run_start_;
  if (log_) st_.mllog_bytes = log_->bytes();  // rank 0's: the resumed run continues the log from here
  try {
    trace::Span traced("checkpoint", "checkpoint");
    save_checkpoint(world_, paths_.checkpoint, cfg_, *model_, *sched_, parallel_->noise(), st_, placement_, data_shape_);
  } catch (const SameOnAllRanks& e) {
    throw SameOnAllRanks(e.code(), "stopped by a signal at step " + std::to_string(done) +
                                       ", but the checkpoint could not be written (an earlier one, if any, is kept): " +
                                       e.what());
  }
  write_record(RunStatus::preempted,
               "stopped by a signal at step " + std::to_string(done) + "; resume with dtbench train --resume");
  const std::string trace_failed = write_trace();
  console_->line("preempted at step " + std::to_string(done) + ": checkpoint " + paths_.checkpoint.string());
  world_.barrier();  // leave together: no rank exits (and gets its peers killed) before the record exists
  agree_on_trace(trace_failed, true);
  return kExitPreempted;
}

int Run::finish(RunStatus status, const std::string& detail) {
  if (status == RunStatus::completed && st_.tta) status = RunStatus::reached_target;
  // MLPerf's status: success when the run reached its quality target by an evaluation in its MLLOG file, where its
  // timed run ended (a run started --init-from another's checkpoint may have reached it in that run's only; one
  // that diverged after it had succeeded by then), or had no target and completed.
  const double target = cfg_["eval"]["target_accuracy"].get<double>();
  const bool success = st_.mllog_timed_run_end_ms >= 0 || (status == RunStatus::completed && target <= 0);
  const bool keep = cfg_["output"]["keep_checkpoint"].get<bool>() && status != RunStatus::diverged;
  if (keep) {
    // Before the open epoch's epoch_stop: a requeued run that resumes at the end (its record was lost) cuts the file
    // back to here, and logs that epoch_stop and its run_stop again, once each.
    if (log_) st_.mllog_bytes = log_->bytes();
    // Another run starts from it (--init-from): the final state, in the format of a preemption's. Written before
    // the weights and the record, so that a finished record always has its checkpoint.
    std::optional<NoiseScaleEstimator> none;
    trace::Span traced("checkpoint", "checkpoint");
    save_checkpoint(world_, paths_.checkpoint, cfg_, *model_, *sched_, parallel_ ? parallel_->noise() : none, st_,
                    placement_, data_shape_);
  }
  if (log_) log_->end_open(mllog::kEpochStop);  // a run that ended within an epoch (a step budget, the target)
  // The saved weights are the evaluated model: with per-replica batch norm, the replicas' mean statistics; in a
  // local SGD phase, the replicas' mean model (the checkpoint above keeps each rank's own, to train on).
  if (saves_weights() && parallel_ && status != RunStatus::diverged) {
    if (parallel_->local_step(st_.step - 1)) {
      // The last use of the model: averaged in place, without keeping this rank's own (average_for_evaluation
      // copied the whole model, a device download on the gpu backend, to throw it away).
      if (!parallel_->averages_after(st_.step - 1)) parallel_->average_models(*model_);
    } else
      parallel_->average_buffers(*model_);
  }
  // Before the record, which names the weights file. Not a preempted (asynchronous) run's: its weights are no final
  // ones, and its record names none (it wrote both files with the partial model; a hunt).
  if (status != RunStatus::preempted) save_weights();
  write_record(status, detail);
  // Logged once the run's files are written: a run whose record could not be written ends with no run_stop (it
  // failed), not with one that says success.
  if (log_) log_->end(mllog::kRunStop, nullptr, {{mllog::kStatus, success ? mllog::kStatusSuccess : mllog::kStatusAborted}});
  // After the record: a trace that cannot be written (a full disk, its folder removed during the run) must not
  // cost the run's results; the run still fails (exit 1), saying so, once every rank has finished.
  const std::string trace_failed = write_trace();
  console_->line("record: " + paths_.record.string() + " (status " + to_string(status) + ")");
  if (!keep && world_.root()) {
    std::error_code ec;
    fs::remove_all(paths_.checkpoint, ec);  // the run is over: its checkpoint is no longer needed
  }
  world_.barrier();
  // A rank whose /output/dir is its own (a node's disk) removes its part of the checkpoint too (it stayed there); on
  // rank 0's folder there is nothing left to remove.
  if (!keep && !world_.root()) {
    std::error_code ec;
    if (fs::exists(paths_.checkpoint, ec)) fs::remove_all(paths_.checkpoint, ec);
  }
  agree_on_trace(trace_failed, status == RunStatus::preempted);
  // An asynchronous run stopped by a signal keeps no checkpoint, but it did not run to its end: the job script
  // requeues it, and --resume runs it again from the start.
  return status == RunStatus::preempted ? kExitPreempted : 0;
}

// --trace: every rank's spans, gathered to rank 0, which writes one file (pid = rank). Returns why rank 0 could not
// write it ("" when it did, and on the other ranks), naming --trace and saying that the record was written.
std::string Run::write_trace() const {
  if (args_.trace.empty()) return "";
  const std::string mine = trace::events(world_.rank()).dump();  // "[...]", never empty: it names its tracks
  std::vector<std::string> ranks;
  try {
    ranks = world_.gather_text(mine.substr(1, mine.size() - 2));
  } catch (const Error& e) {  // the same on every rank (over MPI's 2 GiB)
    return "--trace " + args_.trace + ": the trace could not be gathered (the run's record was written): " + e.what();
  }
  if (!world_.root()) return "";
  std::string text = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  for (size_t r = 0; r < ranks.size(); ++r) text.append(r ? "," : "").append(ranks[r]);
  try {
    write_file_atomic(args_.trace, text + "]}\n", false);
  } catch (const std::exception& e) {
    return "--trace " + args_.trace + ": the trace could not be written (the run's record was): " + e.what();
  }
  return "";
}

// After write_trace, on every rank: the job fails (exit 1) when any rank could not write or gather the trace, with one
// message. A preempted run keeps its exit code 3 (its job is requeued on 3 alone, and it resumes from the checkpoint
// it wrote): rank 0 says what was lost instead.
void Run::agree_on_trace(const std::string& failed, bool preempted) const {
  if (preempted) {
    if (!failed.empty() && world_.root()) std::fprintf(stderr, "dtbench: warning: %s\n", failed.c_str());
    return;
  }
  std::optional<Error> mine;
  if (!failed.empty()) mine = RunFailed(failed);
  world_.agree_on_any_error(mine);
}

void Run::write_record(RunStatus status, const std::string& detail) {
  RunFacts facts{cfg_,          world_.size(), global_,        per_rank_, cadence_.steps_per_epoch,
                       cadence_.total_steps, paths_.record, paths_.weights, baseline_, args_.resume,
                       args_.init_from,   args_.stop_at};
  facts.peak_lr = sched_ ? sched_->peak_lr() : 0.0;
  facts.warmup_steps = sched_ ? sched_->warmup().steps : 0;
  facts.test_set_samples = static_cast<int64_t>(data_->test_set_samples());
  facts.weights_crc32 = weights_crc32_;
  facts.weights_floats = weights_floats_;
  if (pipeline_) {
    facts.whole_parameters = models::describe(train_model_spec(cfg_, data_->train(), nullptr)).param_count();
    facts.pipeline = pipeline_->record(world_, unit_seconds_, model_parallel_->stage_units(),
                                       model_->params().size(), facts.whole_parameters, model_->activation_bytes());
  } else if (model_parallel_) {
    models::ModelSpec whole = train_model_spec(cfg_, data_->train(), nullptr);
    facts.whole_parameters = models::describe(whole).param_count();
    // This attempt's exchanges over this attempt's steps (a resumed run counts from where it resumed).
    const bool whole_equal =
        model_parallel_->whole_tensors_equal(model_->host_params(), model_->param_table(), model_->host_buffers());
    facts.model_parallel = model_parallel_->record(st_.step - attempt_first_step_, model_->params().size(),
                                                   facts.whole_parameters, whole_equal);
  }
  write_run_record(world_, facts, st_, status, detail, *model_, parallel_.get(), asynchronous_stats_,
                   now_seconds() - run_start_, started_utc_);
}

// Rank 0's final weights, then the batch-norm statistics (the replicas' mean: finish()), as raw float32: to --save-weights FILE and to
// <record name>.weights (/output/save_weights; a new file, never replacing one). With tensor model parallelism the
// weights are the whole model's, gathered from the first replica's shards (collective).
void Run::save_weights() {
  if (!saves_weights()) return;
  std::vector<float> whole, whole_buffers;
  if (model_parallel_)
    whole = model_parallel_->gather_whole(model_->host_params(), train_model_spec(cfg_, data_->train(), model_parallel_.get()));
  if (pipeline_)  // each stage holds its own batch norms' statistics too
    whole_buffers = model_parallel_->gather_whole(model_->host_buffers(), {});
  if (!world_.root()) return;
  const std::span<const float> p = model_parallel_ ? std::span<const float>(whole) : model_->host_params();
  std::string bytes(reinterpret_cast<const char*>(p.data()), p.size() * sizeof(float));
  const std::span<const float> b = pipeline_ ? std::span<const float>(whole_buffers) : model_->host_buffers();
  bytes.append(reinterpret_cast<const char*>(b.data()), b.size() * sizeof(float));
  if (!args_.save_weights.empty()) write_file_atomic(args_.save_weights, bytes, false);
  if (!paths_.weights.empty()) write_file_atomic(paths_.weights, bytes, !replace_weights_);
  weights_crc32_ = crc32_hex(crc32_of(bytes));
  weights_floats_ = p.size() + b.size();
}

namespace {

// Every rank of the job must run the same command: a rank with another /duration, reducer, seed, --stop-at, --resume
// or --trace than the others (an MPMD launch, a node given other files) would train something else or wait for
// them in a collective they never enter. Each rank compares its resolved config and options with rank 0's (one
// broadcast of rank 0's text); only what may differ between nodes is left out: /data/path and /output/dir (node-local
// copies and scratch disks) and the paths of --init-from, --save-weights and --trace (whether they are given
// counts: the last two are written by rank 0 from collectives every rank enters). --baseline and --mllog-stdout are
// rank 0's alone.
void agree_on_command(const World& world, const TrainArgs& args, const Json& cfg) {
  if (world.size() == 1) return;
  Json mine = {{"config", cfg},
               {"options", {{"--resume", args.resume}, {"--init-from", !args.init_from.empty()},
                            {"--stop-at", args.stop_at}, {"--print-config", args.print_config},
                            {"--save-weights", !args.save_weights.empty()}, {"--trace", !args.trace.empty()},
                            {"--inject-fault", args.inject_fault}}}};
  mine["config"]["data"].erase("path");
  mine["config"]["output"].erase("dir");
  const Json root = Json::parse(world.broadcast_text(mine.dump()));
  world.on_every_rank([&] {
    if (root == mine) return;
    // A run name derived from the config (reducer, seed, ...) differs with what it is derived from: that key is the
    // one to name, not /config/name, which the user may never have set.
    std::string at = first_difference(root, mine);
    if (at == "/config/name") {
      Json r = root, m = mine;
      r["config"].erase("name"), m["config"].erase("name");
      if (r != m) at = first_difference(r, m);
    }
    throw BadInput("its config or command line differs from rank 0's at " + at +
                     " (every rank runs the same command; only /data/path, /output/dir and the paths of --init-from, "
                     "--save-weights and --trace may differ between nodes)");
  });
}

}  // namespace

int train(const TrainArgs& args, std::optional<ResolvedRun> alone) {
  // The config phase reads the same files on every rank, so its errors are mostly the same everywhere; a file
  // missing on one node or a node without a GPU fails there alone, and the ranks agree on that too.
  const World world;
  std::unique_ptr<Run> run = world.on_every_rank([&] {
    // On this run's rank count: alone, check_config_alone resolved it on one rank before MPI started.
    return std::make_unique<Run>(args, alone && world.size() == 1 ? std::move(*alone) : read_and_resolve(args, world.size()));
  });
  agree_on_command(world, args, run->config());
  if (args.print_config) {
    if (world.root()) std::cout << run->config().dump(2) << "\n";
    return 0;
  }
  return run->execute();
}

ResolvedRun check_config_alone(const TrainArgs& args) { return read_and_resolve(args, 1); }

}  // namespace dtbench
