// Every optimizer's config keys, defaults and factory, one entry each. Hyperparameters and defaults
// follow PyTorch 1.13 where torch has the optimizer, the cited paper or reference implementation
// otherwise (optim/*.cpp say which).
#include "optim/registry.hpp"

#include "optim/adadelta.hpp"
#include "optim/adagrad.hpp"
#include "optim/adam.hpp"
#include "optim/adamax.hpp"
#include "optim/dcasgd.hpp"
#include "optim/ftrl.hpp"
#include "optim/lamb.hpp"
#include "optim/kfac.hpp"
#include "optim/lars.hpp"
#include "optim/nadam.hpp"
#include "optim/options.hpp"
#include "optim/section_reader.hpp"
#include "optim/rmsprop.hpp"
#include "optim/sgd.hpp"
#include "optim/sgld.hpp"

namespace dtbench::optim {

using config::boolean;
using config::integer;
using config::inf;
using config::nonneg;
using config::number;
using config::positive;
using config::unit_open;

namespace {

using Noise = std::shared_ptr<const NoiseSource>;

config::Fields common_fields() {
  return {
      {"lr", positive(0.1, "learning rate (the reference LR at /lr_scaling/reference_batch when a scaling rule is set)")},
      {"weight_decay", nonneg(5e-4, "weight decay coefficient (L2 unless the optimizer decouples it)")},
      {"no_decay_bn_bias", boolean(true, "no weight decay on bias and batch-norm tensors (Goyal et al. 2017)")},
      {"clip_grad_norm", nonneg(0, "clip gradients to this global L2 norm; 0 = off")},
      {"clip_grad_value", nonneg(0, "clip each gradient element to [-v, v]; 0 = off")},
  };
}

CommonOptions common_options(const SectionReader& in) {
  if (in.has("lr")) require_positive(in.number("lr"), "/optimizer/lr");
  CommonOptions c;
  c.weight_decay = in.number("weight_decay");
  c.no_decay_bn_bias = in.flag("no_decay_bn_bias");
  c.clip_grad_norm = in.number("clip_grad_norm");
  c.clip_grad_value = in.number("clip_grad_value");
  return c;
}

SgdOptions sgd_options(const SectionReader& in) {
  SgdOptions o;
  o.momentum = in.number("momentum");
  o.dampening = in.number("dampening");
  o.nesterov = in.flag("nesterov");
  o.decoupled_weight_decay = in.flag("decoupled_weight_decay");
  return o;
}

AdamOptions adam_options(const SectionReader& in, const std::string& name) {
  AdamOptions o;
  o.beta1 = in.number("beta1");
  o.beta2 = in.number("beta2");
  o.eps = in.number("eps");
  o.decoupled_weight_decay = name == "adamw";
  return o;
}

LarsOptions lars_options(const SectionReader& in) {
  LarsOptions o;
  o.momentum = in.number("momentum");
  o.eta = in.number("eta");
  o.eps = in.number("eps");
  o.trust_exclude_bn_bias = in.flag("trust_exclude_bn_bias");
  return o;
}

LambOptions lamb_options(const SectionReader& in) {
  LambOptions o;
  o.beta1 = in.number("beta1");
  o.beta2 = in.number("beta2");
  o.eps = in.number("eps");
  o.bias_correction = in.flag("bias_correction");
  o.trust_clip = in.number("trust_clip");
  o.trust_exclude_bn_bias = in.flag("trust_exclude_bn_bias");
  return o;
}

std::vector<OptimizerEntry> build_registry() {
  const config::Node b1 = unit_open(0.9, "first-moment decay");
  const config::Node b2 = unit_open(0.999, "second-moment decay");
  return {
      {"sgd",
       {{"momentum", unit_open(0.9)},
        {"dampening", number(0, 0, 1)},
        {"nesterov", boolean(false)},
        {"decoupled_weight_decay",
         boolean(false, "w <- (1 - 2 lr wd) w - lr g (the seeds' form) instead of L2 added to g")}},
       [](const SectionReader& in, ParamTable t, const CommonOptions& c, uint64_t, Noise) -> std::unique_ptr<Optimizer> {
         return std::make_unique<Sgd>(std::move(t), c, sgd_options(in));
       },
       FusedKernel::sgd},
      {"adam",
       {{"lr", positive(1e-3)}, {"weight_decay", nonneg(0)}, {"beta1", b1}, {"beta2", b2}, {"eps", positive(1e-8)}},
       [](const SectionReader& in, ParamTable t, const CommonOptions& c, uint64_t, Noise) -> std::unique_ptr<Optimizer> {
         return std::make_unique<Adam>(std::move(t), c, adam_options(in, "adam"));
       },
       FusedKernel::adam},
      {"adamw",
       {{"lr", positive(1e-3)}, {"weight_decay", nonneg(1e-2)}, {"beta1", b1}, {"beta2", b2}, {"eps", positive(1e-8)}},
       [](const SectionReader& in, ParamTable t, const CommonOptions& c, uint64_t, Noise) -> std::unique_ptr<Optimizer> {
         return std::make_unique<Adam>(std::move(t), c, adam_options(in, "adamw"));
       },
       FusedKernel::adam},
      {"adamax",
       {{"lr", positive(2e-3)}, {"weight_decay", nonneg(0)}, {"beta1", b1}, {"beta2", b2}, {"eps", positive(1e-8)}},
       [](const SectionReader& in, ParamTable t, const CommonOptions& c, uint64_t, Noise) -> std::unique_ptr<Optimizer> {
         AdamaxOptions o;
         o.beta1 = in.number("beta1");
         o.beta2 = in.number("beta2");
         o.eps = in.number("eps");
         return std::make_unique<Adamax>(std::move(t), c, o);
       }},
      {"nadam",
       {{"lr", positive(2e-3)}, {"weight_decay", nonneg(0)}, {"beta1", b1}, {"beta2", b2}, {"eps", positive(1e-8)},
        {"momentum_decay", nonneg(4e-3)}},
       [](const SectionReader& in, ParamTable t, const CommonOptions& c, uint64_t, Noise) -> std::unique_ptr<Optimizer> {
         NadamOptions o;
         o.beta1 = in.number("beta1");
         o.beta2 = in.number("beta2");
         o.eps = in.number("eps");
         o.momentum_decay = in.number("momentum_decay");
         return std::make_unique<Nadam>(std::move(t), c, o);
       }},
      {"adagrad",
       {{"lr", positive(1e-2)}, {"weight_decay", nonneg(0)}, {"lr_decay", nonneg(0)},
        {"initial_accumulator_value", nonneg(0)}, {"eps", positive(1e-10)}},
       [](const SectionReader& in, ParamTable t, const CommonOptions& c, uint64_t, Noise) -> std::unique_ptr<Optimizer> {
         AdagradOptions o;
         o.lr_decay = in.number("lr_decay");
         o.initial_accumulator_value = in.number("initial_accumulator_value");
         o.eps = in.number("eps");
         return std::make_unique<Adagrad>(std::move(t), c, o);
       }},
      {"rmsprop",
       {{"lr", positive(1e-2)}, {"weight_decay", nonneg(0)}, {"alpha", unit_open(0.99)}, {"eps", positive(1e-8)},
        {"momentum", unit_open(0)}, {"centered", boolean(false)}},
       [](const SectionReader& in, ParamTable t, const CommonOptions& c, uint64_t, Noise) -> std::unique_ptr<Optimizer> {
         RmspropOptions o;
         o.alpha = in.number("alpha");
         o.eps = in.number("eps");
         o.momentum = in.number("momentum");
         o.centered = in.flag("centered");
         return std::make_unique<Rmsprop>(std::move(t), c, o);
       }},
      {"adadelta",
       {{"lr", positive(1.0)}, {"weight_decay", nonneg(0)}, {"rho", unit_open(0.9)}, {"eps", positive(1e-6)}},
       [](const SectionReader& in, ParamTable t, const CommonOptions& c, uint64_t, Noise) -> std::unique_ptr<Optimizer> {
         AdadeltaOptions o;
         o.rho = in.number("rho");
         o.eps = in.number("eps");
         return std::make_unique<Adadelta>(std::move(t), c, o);
       }},
      {"ftrl",
       {{"lr", positive(0.1)}, {"weight_decay", nonneg(0)}, {"l1", nonneg(0)}, {"l2", nonneg(0)},
        {"beta", nonneg(1.0)}, {"lr_power", number(-0.5, -inf, 0)}, {"initial_accumulator_value", nonneg(0.1)}},
       [](const SectionReader& in, ParamTable t, const CommonOptions& c, uint64_t, Noise) -> std::unique_ptr<Optimizer> {
         FtrlOptions o;
         o.l1 = in.number("l1");
         o.l2 = in.number("l2");
         o.beta = in.number("beta");
         o.lr_power = in.number("lr_power");
         o.initial_accumulator_value = in.number("initial_accumulator_value");
         return std::make_unique<Ftrl>(std::move(t), c, o);
       }},
      {"sgld",
       {{"weight_decay", nonneg(0)}, {"temperature", nonneg(1.0, "scales the noise variance")}},
       [](const SectionReader& in, ParamTable t, const CommonOptions& c, uint64_t seed, Noise noise) -> std::unique_ptr<Optimizer> {
         SgldOptions o;
         o.temperature = in.number("temperature");
         return std::make_unique<Sgld>(std::move(t), c, o, seed, std::move(noise));
       }},
      {"dcasgd",
       {{"weight_decay", nonneg(0)}, {"momentum", unit_open(0)},
        {"lambda", nonneg(0.04, "delay-compensation strength (Zheng et al. 2017)")}},
       [](const SectionReader& in, ParamTable t, const CommonOptions& c, uint64_t, Noise) -> std::unique_ptr<Optimizer> {
         DcasgdOptions o;
         o.momentum = in.number("momentum");
         o.lambda = in.number("lambda");
         return std::make_unique<Dcasgd>(std::move(t), c, o);
       }},
      {"lars",
       {{"weight_decay", nonneg(5e-5)}, {"momentum", unit_open(0.9)}, {"eta", positive(1e-3, "trust coefficient")},
        {"eps", nonneg(0)}, {"trust_exclude_bn_bias", boolean(true, "bias and bn tensors skip the trust ratio")}},
       [](const SectionReader& in, ParamTable t, const CommonOptions& c, uint64_t, Noise) -> std::unique_ptr<Optimizer> {
         return std::make_unique<Lars>(std::move(t), c, lars_options(in));
       },
       FusedKernel::lars},
      {"lamb",
       {{"lr", positive(1e-3)}, {"weight_decay", nonneg(1e-2)}, {"beta1", b1}, {"beta2", b2}, {"eps", positive(1e-6)},
        {"bias_correction", boolean(true)}, {"trust_clip", nonneg(0, "clamp the trust ratio at this value; 0 = no clamp")},
        {"trust_exclude_bn_bias", boolean(true)}},
       [](const SectionReader& in, ParamTable t, const CommonOptions& c, uint64_t, Noise) -> std::unique_ptr<Optimizer> {
         return std::make_unique<Lamb>(std::move(t), c, lamb_options(in));
       },
       FusedKernel::lamb},
      {"kfac",
       {{"lr", positive(0.1)}, {"weight_decay", nonneg(5e-4)}, {"momentum", unit_open(0.9)},
        {"damping", positive(1e-3, "Tikhonov damping gamma, split between the two factors")},
        {"factor_decay", unit_open(0.95, "running-average decay of the Kronecker factors")},
        {"factor_interval", integer(10, 1, inf, "steps between factor statistics")},
        {"inverse_interval", integer(100, 1, inf, "steps between inverses of the damped factors")},
        {"kl_clip", nonneg(1e-3, "KL clip of the preconditioned step (Ba et al. 2017); 0 = off")},
        {"statistics_images", integer(0, 0, inf, "estimate the factors from this many images per rank; 0 = all")}},
       [](const SectionReader& in, ParamTable t, const CommonOptions& c, uint64_t, Noise) -> std::unique_ptr<Optimizer> {
         KfacOptions o;
         o.momentum = in.number("momentum");
         o.damping = in.number("damping");
         o.factor_decay = in.number("factor_decay");
         o.factor_interval = in.integer("factor_interval");
         o.inverse_interval = in.integer("inverse_interval");
         o.kl_clip = in.number("kl_clip");
         o.statistics_images = in.integer("statistics_images");
         return std::make_unique<Kfac>(std::move(t), c, o);
       }},
  };
}

// The reader of a section that names a registered optimizer.
SectionReader reader(const Json& section) {
  const std::string name = section["name"].get<std::string>();
  config::Fields storage;
  const config::Fields* fields = config::variant_fields(optimizer_schema(), name, storage);
  if (!fields) throw BadInput("/optimizer/name: unknown optimizer '" + name + "'");
  return SectionReader(section, "/optimizer", *fields);
}

std::string known_names() {
  std::string s;
  for (const std::string& n : optimizer_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

const std::vector<OptimizerEntry>& optimizer_registry() {
  static const std::vector<OptimizerEntry> entries = build_registry();
  return entries;
}

const config::Node& optimizer_schema() {
  static const config::Node node = [] {
    config::Variants variants;
    for (const OptimizerEntry& e : optimizer_registry()) variants.emplace_back(e.name, e.fields);
    return config::variant("name", "sgd", common_fields(), std::move(variants), "optimizer and its hyperparameters");
  }();
  return node;
}

const OptimizerEntry* find_optimizer(const std::string& name) {
  for (const OptimizerEntry& e : optimizer_registry())
    if (e.name == name) return &e;
  return nullptr;
}

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = config::variant_names(optimizer_schema());
  return names;
}

const std::vector<std::string>& gpu_optimizer_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const OptimizerEntry& e : optimizer_registry())
      if (e.gpu != FusedKernel::none) out.push_back(e.name);
    return out;
  }();
  return names;
}

CommonOptions read_common_options(const Json& section) { return common_options(reader(section)); }
SgdOptions read_sgd_options(const Json& section) { return sgd_options(reader(section)); }
AdamOptions read_adam_options(const Json& section, const std::string& name) {
  return adam_options(reader(section), name);
}
LarsOptions read_lars_options(const Json& section) { return lars_options(reader(section)); }
LambOptions read_lamb_options(const Json& section) { return lamb_options(reader(section)); }

std::unique_ptr<Optimizer> make_optimizer(const Json& section, ParamTable table, uint64_t seed,
                                          std::shared_ptr<const NoiseSource> sgld_noise) {
  if (!section.is_object()) throw BadInput("/optimizer: must be an object");
  if (!section.contains("name") || !section["name"].is_string()) {
    throw BadInput("/optimizer/name: missing (one of " + known_names() + ")");
  }
  const std::string name = section["name"].get<std::string>();
  const OptimizerEntry* entry = find_optimizer(name);
  if (!entry) {
    throw BadInput("/optimizer/name: unknown optimizer '" + name + "' (known: " + known_names() + ")");
  }
  const SectionReader in = reader(section);
  return entry->make(in, std::move(table), common_options(in), seed, std::move(sgld_noise));
}

}  // namespace dtbench::optim
