// Every config key of a dtbench run, with its type, range and default: the one place defaults live.
// Keep README.md's config reference and results/schema/run-record.schema.json in step with it.
#include "core/config_spec.hpp"

namespace dtbench::config {
namespace {

using Kind = Node::Kind;
constexpr double inf = std::numeric_limits<double>::infinity();

Node number(double def, double lo, double hi, bool lo_open = false, bool hi_open = false,
            std::string doc = {}) {
  Node n;
  n.kind = Kind::number;
  n.def = def;
  n.lo = lo, n.hi = hi, n.lo_open = lo_open, n.hi_open = hi_open;
  n.doc = std::move(doc);
  return n;
}
Node positive(double def, std::string doc = {}) { return number(def, 0, inf, true, false, std::move(doc)); }
Node nonneg(double def, std::string doc = {}) { return number(def, 0, inf, false, false, std::move(doc)); }
Node unit_open(double def, std::string doc = {}) { return number(def, 0, 1, false, true, std::move(doc)); }
Node integer(long def, double lo, double hi = inf, std::string doc = {}) {
  Node n;
  n.kind = Kind::integer;
  n.def = def;
  n.lo = lo, n.hi = hi;
  n.doc = std::move(doc);
  return n;
}
Node boolean(bool def, std::string doc = {}) {
  Node n;
  n.kind = Kind::boolean;
  n.def = def;
  n.doc = std::move(doc);
  return n;
}
Node text(std::string def, std::initializer_list<std::string> choices = {}, std::string doc = {}) {
  Node n;
  n.kind = Kind::string;
  n.def = std::move(def);
  n.choices = choices;  // an initializer_list: {"a", "b"} must never become vector(first, last)
  n.doc = std::move(doc);
  return n;
}
Node integers(std::vector<long> def, std::string doc = {}) {
  Node n;
  n.kind = Kind::integer_list;
  n.def = def;
  n.lo = 0;
  n.doc = std::move(doc);
  return n;
}
Node object(Fields fields, std::string doc = {}) {
  Node n;
  n.kind = Kind::object;
  n.fields = std::move(fields);
  n.doc = std::move(doc);
  return n;
}
Node variant(std::string selector, std::string def, Fields common,
             std::vector<std::pair<std::string, Fields>> variants, std::string doc = {}) {
  Node n;
  n.kind = Kind::variant;
  n.selector = selector;
  n.def = def;
  n.fields = std::move(common);
  n.variants = std::move(variants);
  n.doc = std::move(doc);
  return n;
}

// Optimizers: hyperparameters and defaults follow PyTorch 1.13 where torch has the optimizer, the
// cited paper or reference implementation otherwise (optim/*.cpp say which).
Node optimizer_node() {
  Fields common = {
      {"lr", positive(0.1, "learning rate (the reference LR at /lr_scaling/reference_batch when a scaling rule is set)")},
      {"weight_decay", nonneg(5e-4, "weight decay coefficient (L2 unless the optimizer decouples it)")},
      {"no_decay_bn_bias", boolean(true, "no weight decay on bias and batch-norm tensors (Goyal et al. 2017)")},
      {"clip_grad_norm", nonneg(0, "clip gradients to this global L2 norm; 0 = off")},
      {"clip_grad_value", nonneg(0, "clip each gradient element to [-v, v]; 0 = off")},
  };
  Node b1 = unit_open(0.9, "first-moment decay");
  Node b2 = unit_open(0.999, "second-moment decay");
  return variant(
      "name", "sgd", common,
      {
          {"sgd",
           {{"momentum", unit_open(0.9)},
            {"dampening", number(0, 0, 1)},
            {"nesterov", boolean(false)},
            {"decoupled_weight_decay",
             boolean(false, "w <- (1 - 2 lr wd) w - lr g (the seeds' form) instead of L2 added to g")}}},
          {"adam", {{"lr", positive(1e-3)}, {"weight_decay", nonneg(0)}, {"beta1", b1}, {"beta2", b2},
                    {"eps", positive(1e-8)}}},
          {"adamw", {{"lr", positive(1e-3)}, {"weight_decay", nonneg(1e-2)}, {"beta1", b1}, {"beta2", b2},
                     {"eps", positive(1e-8)}}},
          {"adamax", {{"lr", positive(2e-3)}, {"weight_decay", nonneg(0)}, {"beta1", b1}, {"beta2", b2},
                      {"eps", positive(1e-8)}}},
          {"nadam", {{"lr", positive(2e-3)}, {"weight_decay", nonneg(0)}, {"beta1", b1}, {"beta2", b2},
                     {"eps", positive(1e-8)}, {"momentum_decay", nonneg(4e-3)}}},
          {"adagrad", {{"lr", positive(1e-2)}, {"weight_decay", nonneg(0)}, {"lr_decay", nonneg(0)},
                       {"initial_accumulator_value", nonneg(0)}, {"eps", positive(1e-10)}}},
          {"rmsprop", {{"lr", positive(1e-2)}, {"weight_decay", nonneg(0)}, {"alpha", unit_open(0.99)},
                       {"eps", positive(1e-8)}, {"momentum", unit_open(0)}, {"centered", boolean(false)}}},
          {"adadelta", {{"lr", positive(1.0)}, {"weight_decay", nonneg(0)}, {"rho", unit_open(0.9)},
                        {"eps", positive(1e-6)}}},
          {"ftrl", {{"lr", positive(0.1)}, {"weight_decay", nonneg(0)}, {"l1", nonneg(0)}, {"l2", nonneg(0)},
                    {"beta", nonneg(1.0)}, {"lr_power", number(-0.5, -inf, 0)},
                    {"initial_accumulator_value", nonneg(0.1)}}},
          {"sgld", {{"weight_decay", nonneg(0)}, {"temperature", nonneg(1.0, "scales the noise variance")}}},
          {"dcasgd", {{"weight_decay", nonneg(0)}, {"momentum", unit_open(0)},
                      {"lambda", nonneg(0.04, "delay-compensation strength (Zheng et al. 2017)")}}},
          {"lars", {{"weight_decay", nonneg(5e-5)}, {"momentum", unit_open(0.9)},
                    {"eta", positive(1e-3, "trust coefficient")}, {"eps", nonneg(0)},
                    {"trust_exclude_bn_bias", boolean(true, "bias and bn tensors skip the trust ratio")}}},
          {"lamb", {{"lr", positive(1e-3)}, {"weight_decay", nonneg(1e-2)}, {"beta1", b1}, {"beta2", b2},
                    {"eps", positive(1e-6)}, {"bias_correction", boolean(true)},
                    {"trust_clip", nonneg(0, "clamp the trust ratio at this value; 0 = no clamp")},
                    {"trust_exclude_bn_bias", boolean(true)}}},
      },
      "optimizer and its hyperparameters");
}

Node schedule_node() {
  Fields common = {
      {"unit", text("epoch", {"epoch", "step"}, "what the schedule's t counts")},
      {"warmup", object({{"epochs", nonneg(0, "linear warmup length in epochs")},
                         {"steps", integer(0, 0, inf, "linear warmup length in steps")},
                         {"start_factor", number(0, 0, 1, false, false, "LR at t=0 as a fraction of the peak")},
                         {"from_reference_lr",
                          boolean(false, "start at the unscaled reference LR (Goyal et al. gradual warmup)")}})},
  };
  return variant("name", "constant", common,
                 {
                     {"constant", {}},
                     {"step", {{"step_size", integer(30, 1)}, {"gamma", number(0.1, 0, 1, true)}}},
                     {"multistep", {{"milestones", integers({30, 60, 80})}, {"gamma", number(0.1, 0, 1, true)}}},
                     {"exponential", {{"gamma", number(0.95, 0, 1, true)}}},
                     {"polynomial", {{"power", positive(2.0)}, {"end_lr", nonneg(1e-4)},
                                     {"total", integer(0, 0, inf, "decay length; 0 = the run's length")}}},
                     {"cosine", {{"t_max", integer(0, 0, inf, "0 = the run's length")}, {"eta_min", nonneg(0)}}},
                     {"inverse_sqrt", {{"beta", positive(1.0, "lr = alpha / sqrt(beta + t), alpha = /optimizer/lr")}}},
                     {"plateau", {{"mode", text("max", {"max", "min"})}, {"factor", number(0.1, 0, 1, true, true)},
                                  {"patience", integer(10, 0)}, {"threshold", nonneg(1e-4)},
                                  {"cooldown", integer(0, 0)}, {"min_lr", nonneg(0)}}},
                 },
                 "learning-rate schedule");
}

Node build_schema() {
  return object({
      {"name", text("", {}, "run name; empty = derived from model, optimizer, reducer, ranks, batch and seed")},
      {"seed", integer(1, 0, 9007199254740991.0, "seed of every random stream of the run")},
      {"backend", text("cpu", {"cpu", "gpu"})},
      {"precision", text("fp32", {"fp32", "bf16", "fp16"}, "compute precision; master weights stay fp32")},
      {"threads", integer(0, 0, 4096, "compute threads per rank; 0 = OpenMP's default")},
      {"model", object({{"arch", text("resnet20", {"resnet8", "resnet20", "resnet32", "resnet56", "resnet18",
                                                   "resnet50", "mlp"})},
                        {"zero_init_residual", boolean(false, "zero gamma in each block's last BN (Goyal et al.)")},
                        {"hidden", integer(256, 1, 1 << 20, "mlp only: hidden width")},
                        {"label_smoothing", number(0, 0, 1, false, true, "softmax cross-entropy label smoothing")},
                        {"dropout", number(0, 0, 1, false, true, "dropout before the classifier; 0 = none")}})},
      {"data", object({{"dataset", text("fashion-mnist", {"fashion-mnist", "mnist", "cifar10", "cifar100", "synthetic"})},
                       {"path", text("", {}, "folder of the data files; empty = the data set's default location")},
                       {"normalize", boolean(true)},
                       {"augment", object({{"random_crop_padding", integer(0, 0, 64)},
                                           {"horizontal_flip", boolean(false)}})},
                       {"synthetic", object({{"channels", integer(3, 1, 4096)},
                                             {"height", integer(32, 1, 4096)},
                                             {"width", integer(32, 1, 4096)},
                                             {"classes", integer(10, 2, 1 << 20)},
                                             {"train_size", integer(10000, 1, 1e9)},
                                             {"test_size", integer(2000, 1, 1e9)}})}})},
      {"batch", object({{"global", integer(128, 0, 1e9, "global batch (K x per-rank); give this or per_rank")},
                        {"per_rank", integer(0, 0, 1e9, "per-rank batch; give this or global")}})},
      {"duration", object({{"epochs", integer(1, 0, 1e6, "run length in epochs; give this or steps")},
                           {"steps", integer(0, 0, 1e12, "run length in optimizer steps; give this or epochs")}})},
      {"optimizer", optimizer_node()},
      {"lr_scaling", object({{"rule", text("none", {"none", "linear", "sqrt"})},
                             {"reference_batch", integer(256, 1, 1e9)}})},
      {"schedule", schedule_node()},
      {"reducer", object({{"name", text("ring", {"parameter_server", "tree", "butterfly", "ring",
                                                 "halving_doubling", "mpi", "nccl", "async_parameter_server"})},
                          {"servers", integer(1, 1, 1e6, "parameter_server: number of server shards")},
                          {"bucket_mib", positive(1, "gradient bucket size in MiB (PyTorch DDP uses 25; the small CPU models need smaller ones to overlap at all)")},
                          {"overlap", boolean(true, "start each bucket's allreduce during backward")},
                          {"poll_us", integer(0, 0, 100000,
                                              "MPI waits: 0 = block in MPI (polls, busy core); > 0 = test, "
                                              "then sleep this many microseconds between tests")}})},
      {"parallel", object({{"mode", text("sync", {"sync", "local_sgd", "post_local_sgd", "async"},
                                         "sync: average gradients every step; local_sgd: average models every "
                                         "local_steps steps; post_local_sgd: sync until the switch point, then "
                                         "local; async: asynchronous parameter server")},
                           {"local_steps", integer(1, 1, 1e9, "H: local steps between model averages")},
                           {"switch_epoch", integer(0, 0, 1e6, "post_local_sgd: first local epoch")},
                           {"switch_step", integer(0, 0, 1e12, "post_local_sgd: first local step (if > 0)")},
                           {"sync_bn", boolean(false, "batch-norm statistics over the global batch")}})},
      {"eval", object({{"every_epochs", integer(1, 0, 1e6, "evaluate every E epochs")},
                       {"every_steps", integer(0, 0, 1e12, "evaluate every S steps instead")},
                       {"target_accuracy", number(0, 0, 1, false, false, "time-to-accuracy target; 0 = none")},
                       {"stop_at_target", boolean(false, "end the run at the first evaluation at or above the target (asynchronous SGD: the workers stop at their next push after rank 0's evaluation)")},
                       {"batch", integer(500, 1, 1e6, "evaluation batch per rank")}})},
      {"output", object({{"dir", text("results/runs", {}, "folder of the run record")},
                         {"record", text("", {}, "record file name; empty = <name>.json")}})},
  });
}

}  // namespace

const Node& schema() {
  static const Node root = build_schema();
  return root;
}

const Fields* variant_fields(const Node& node, const std::string& value, Fields& storage) {
  for (const auto& [name, extra] : node.variants) {
    if (name != value) continue;
    storage = node.fields;
    for (const auto& [key, field] : extra) {
      bool replaced = false;
      for (auto& [k, f] : storage) {
        if (k == key) {
          f = field;
          replaced = true;
        }
      }
      if (!replaced) storage.emplace_back(key, field);
    }
    return &storage;
  }
  return nullptr;
}

}  // namespace dtbench::config
