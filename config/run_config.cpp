// The root schema (every key of a run that no module owns, plus the modules' sections) and resolving.
// Keep README.md's config reference and results/schema/run-record.schema.json in step with it.
#include "config/run_config.hpp"

#include <algorithm>

#include "config/rules.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "optim/registry.hpp"
#include "optim/schedule.hpp"
#include "reducers/reducer_schema.hpp"

namespace dtbench::config {
namespace {

// The model: keys every architecture has, and the widths of those that have them (a key that does not
// apply to the chosen arch is an unknown key there). simple_cnn's defaults are Shallue et al.'s base widths.
Node model_schema() {
  Fields common = {{"zero_init_residual", boolean(false, "zero gamma in each block's last BN (Goyal et al.)")},
                   {"label_smoothing", single(number(0, 0, 1, false, true, "softmax cross-entropy label smoothing"))},
                   {"dropout", single(number(0, 0, 1, false, true, "dropout before the classifier; 0 = none"))},
                   {"ghost_batch", integer(0, 0, 1e9, "ghost batch norm (Hoffer et al. 2017): batch-norm statistics "
                                                      "over ghost batches of this many samples within each "
                                                      "forward's batch; 0 = the whole batch")},
                   {"checkpointing", boolean(false, "gradient checkpointing (Chen et al. 2016): keep activations only "
                                                    "at segment boundaries, recompute each segment in the backward")},
                   {"checkpoint_segments", integer(0, 0, 1e6, "segments of gradient checkpointing; 0 = "
                                                              "round(sqrt(checkpoint units of the arch))")}};
  Variants archs;
  for (const char* resnet : {"resnet8", "resnet20", "resnet32", "resnet56", "resnet18", "resnet50"})
    archs.push_back({resnet, {}});
  archs.push_back({"mlp", {{"hidden", integer(256, 1, 1 << 20, "hidden width")}}});
  archs.push_back({"simple_cnn", {{"conv_filters", integers({32, 64}, "filters of the two 5x5 convolutions")},
                                  {"hidden", integer(1024, 1, 1 << 20, "width of the hidden fully connected layer")}}});
  return variant("arch", "resnet20", std::move(common), std::move(archs), "network architecture and its widths");
}

Node build_run_schema() {
  return object({
      {"name", text("", {}, "run name; empty = derived from model, optimizer, reducer, ranks, batch and seed")},
      {"seed", integer(1, 0, static_cast<double>(kMaxSeed), "seed of every random stream of the run")},
      {"backend", text("cpu", {"cpu", "gpu"})},
      {"precision", text("fp32", {"fp32", "bf16", "fp16"}, "compute precision; master weights stay fp32")},
      {"threads", integer(0, 0, 4096, "compute threads per rank; 0 = OMP_NUM_THREADS when set, else the CPUs this rank may run on shared among the ranks on its host that may run on the same CPUs")},
      {"model", model_schema()},
      {"data", object({{"dataset", text("fashion-mnist", {"fashion-mnist", "mnist", "cifar10", "cifar100", "synthetic"})},
                       {"path", text("", {}, "folder of the data files; empty = the data set's default location")},
                       {"normalize", boolean(true)},
                       {"validation_size", integer(0, 0, 1e9,
                                                   "images held out of the training set (its last ones): never "
                                                   "trained on, evaluated beside the test set at every evaluation")},
                       {"augment", object({{"random_crop_padding", integer(0, 0, 64)},
                                           {"horizontal_flip", boolean(false)}})},
                       {"synthetic", object({{"channels", integer(3, 1, 4096)},
                                             {"height", integer(32, 1, 4096)},
                                             {"width", integer(32, 1, 4096)},
                                             {"classes", integer(10, 2, 1 << 20)},
                                             {"train_size", integer(10000, 1, 1e9)},
                                             {"test_size", integer(2000, 1, 1e9)},
                                             {"seed", integer(-1, -1, static_cast<double>(kMaxSeed),
                                                              "the data set's own seed; -1: the run's /seed")}})}})},
      {"batch", object({{"global", integer(128, 0, 1e9, "global batch (K x per-rank); give this or per_rank")},
                        {"per_rank", integer(0, 0, 1e9, "per-rank batch; give this or global")},
                        {"micro_batches", integer(1, 1, 1e9, "gradient accumulation: forward/backward passes per "
                                                             "step, each over per_rank / micro_batches samples")}})},
      {"duration", object({{"epochs", integer(1, 0, 1e6, "run length in epochs; give this or steps")},
                           {"steps", integer(0, 0, 1e12, "run length in optimizer steps; give this or epochs")}})},
      {"optimizer", all_single(optim::optimizer_schema())},  // the kernels cast every setting to float32
      {"lr_scaling", object({{"rule", text("none", {"none", "linear", "sqrt"})},
                             {"reference_batch", integer(256, 1, 1e9)}})},
      {"schedule", optim::schedule_schema()},
      {"reducer", reducer_schema()},
      {"parallel", object({{"mode", text("sync", {"sync", "local_sgd", "post_local_sgd", "async"},
                                         "sync: average gradients every step; local_sgd: average models every "
                                         "local_steps steps; post_local_sgd: sync until the switch point, then "
                                         "local; async: asynchronous parameter server")},
                           {"local_steps", integer(1, 1, 1e9, "H: local steps between model averages")},
                           {"switch_epoch", integer(0, 0, 1e6, "post_local_sgd: first local epoch")},
                           {"switch_step", integer(0, 0, 1e12, "post_local_sgd: first local step (if > 0)")},
                           {"sync_bn", boolean(false, "batch-norm statistics over the global batch")},
                           {"bounded_staleness", boolean(false, "async: stale-synchronous parallel (Ho et al. 2013), "
                                                                "no worker more than staleness_bound pushes ahead of the "
                                                                "slowest; false = unbounded")},
                           {"staleness_bound", integer(0, 0, 1e9, "SSP's s: 0 = lockstep rounds")},
                           {"model_parallel", integer(1, 1, 4096,
                                                      "tensor model parallelism: ranks per model-parallel group (M); "
                                                      "a group's ranks see the same batch and each owns 1/M of "
                                                      "every convolution's and fully connected layer's output "
                                                      "units; the K/M "
                                                      "groups are the data-parallel replicas")},
                           {"pipeline_stages", integer(1, 1, 4096,
                                                       "pipeline parallelism: stages per replica (S); the network's "
                                                       "layers are cut into S stages of balanced measured cost, "
                                                       "one per rank, and /batch/micro_batches micro-batches flow "
                                                       "through them; the K/S pipelines are the data-parallel "
                                                       "replicas")},
                           {"pipeline_cut", integers({}, "pipeline stages' first units after stage 0 (S - 1 "
                                                         "increasing unit indices); empty = cut by the units' "
                                                         "measured costs (extra.pipeline of a record shows the cut "
                                                         "it made)")},
                           {"pipeline_schedule", text("1f1b", {"1f1b", "gpipe"},
                                                      "pipeline stages' order of micro-batch forwards and "
                                                      "backwards: 1f1b (one forward, one backward; at most S "
                                                      "micro-batches in flight) or gpipe (all forwards, then all "
                                                      "backwards)")}})},
      {"eval", object({{"every_epochs", integer(1, 0, 1e6, "evaluate every E epochs")},
                       {"every_steps", integer(0, 0, 1e12, "evaluate every S steps instead")},
                       {"target_accuracy", number(0, 0, 1, false, false, "time-to-accuracy target; 0 = none")},
                       {"stop_at_target", boolean(false, "end the run at the first evaluation at or above the target (asynchronous SGD: the workers stop at their next push after rank 0's evaluation)")},
                       {"batch", integer(500, 1, 1e6, "evaluation batch per rank")},
                       {"test_samples", integer(0, 0, 1e9, "evaluate on the test set's first N images; 0 = all of "
                                                           "them (MLPerf's and the papers' figures). Fewer makes "
                                                           "each evaluation cheaper and its accuracy noisier")}})},
      {"mllog", object({{"submission_org", text("dtbench", {}, "MLPerf submission_org: who ran it (not empty)")},
                        {"submission_platform", text("", {}, "MLPerf submission_platform; empty = <ranks>x<CPU model> "
                                                             "(cpu backend) or <ranks>x<GPU name>")},
                        {"submission_division", text("open", {"open"}, "MLPerf submission_division: \"open\" only (the log keeps the common "
                                                                "and open-division rules; the closed division's "
                                                                "per-benchmark hyperparameters, such as "
                                                                "gradient_accumulation_steps, are not logged)")},
                        {"submission_status", text("research", {"cloud", "onprem", "preview", "research"},
                                                   "MLPerf submission_status")},
                        {"submission_benchmark", text("", {}, "MLPerf submission_benchmark; empty = \"resnet\" for "
                                                              "the ResNets, the arch's name otherwise")},
                        {"cache_clear", boolean(false, "the launcher dropped the OS page cache before the run "
                                                       "(logged as cache_clear; dtbench does not drop it)")}})},
      {"output", object({{"dir", text("results/runs", {}, "folder of the run record")},
                         {"record", text("", {}, "record file name, ending in .json; empty = <name>.json")},
                         {"save_weights", boolean(false, "write the final weights to <record name>.weights beside "
                                                         "the record (raw float32, as --save-weights)")},
                         {"keep_checkpoint", boolean(false, "write a checkpoint of the final state to <record "
                                                            "name>.ckpt/ and keep it, for another run's --init-from")}})},
  });
}


bool user_sets(const Json& user, const char* section, const char* key) {
  return user.is_object() && user.contains(section) && user[section].is_object() && user[section].contains(key);
}

// Two keys of which the user gives one: the one the user did not give is switched off (0) so a user
// who writes only "per_rank" does not collide with the default "global". Giving both is a rule.
void either_or(const Json& user, Json& out, const char* section, const char* a, const char* b) {
  bool ua = user_sets(user, section, a), ub = user_sets(user, section, b);
  if (ub && !ua) out[section][a] = 0;
  if (ua && !ub) out[section][b] = 0;
}

}  // namespace

const Node& run_schema() {
  static const Node root = build_run_schema();
  return root;
}

Json defaults() { return resolve_node(run_schema(), nullptr, ""); }

Json resolve(const Json& user, int ranks) {
  Json out = resolve_node(run_schema(), &user, "");
  either_or(user, out, "batch", "global", "per_rank");
  either_or(user, out, "duration", "epochs", "steps");
  either_or(user, out, "eval", "every_epochs", "every_steps");
  check_rules(out, ranks, false);
  return out;
}

std::string attributed(const std::string& message, const std::string& path, const std::vector<std::string>& overrides) {
  const std::string at = message.rfind('/', 0) == 0 ? message.substr(0, message.find(": ")) : "";
  std::string source = path;
  for (const std::string& set : overrides) {
    const std::string pointer = dotted_pointer(std::string_view(set).substr(0, set.find('=')));
    const bool related = !at.empty() && (at == pointer || at.rfind(pointer + "/", 0) == 0 || pointer.rfind(at + "/", 0) == 0);
    // A long value is shortened: the message is about the key, and a capped message keeps its beginning.
    if (related) source = "--set " + (set.size() > 80 ? set.substr(0, set.find('=') + 1 + 40) + "... (" + std::to_string(set.size() - set.find('=') - 1) + " bytes)" : set);
  }
  // A message about a command-line option ("--inject-fault: ...", "--set ...") names its source already.
  if (source.empty() || (!path.empty() && message.rfind(path, 0) == 0) || message.rfind("--", 0) == 0) return message;
  return source + ": " + message;
}

Json load(const std::string& path, const std::vector<std::string>& overrides, int ranks) {
  Json user = read_user(path, overrides);
  try {
    return resolve(user, ranks);
  } catch (const BadInput& e) {
    throw BadInput(attributed(e.what(), path, overrides));
  }
}

int replicas(const Json& c, int ranks) {
  const int64_t group = c["parallel"]["model_parallel"].get<int64_t>() * c["parallel"]["pipeline_stages"].get<int64_t>();
  return static_cast<int>(std::max<int64_t>(ranks / std::max<int64_t>(group, 1), 1));
}

long per_rank_batch(const Json& c, int ranks) {
  int64_t per = c["batch"]["per_rank"].get<int64_t>();
  if (per > 0) return per;
  return c["batch"]["global"].get<int64_t>() / replicas(c, ranks);
}

long global_batch(const Json& c, int ranks) {
  int64_t global = c["batch"]["global"].get<int64_t>();
  if (global > 0) return global;
  return c["batch"]["per_rank"].get<int64_t>() * replicas(c, ranks);
}

}  // namespace dtbench::config
