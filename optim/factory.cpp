// make_optimizer: the resolved "/optimizer" config section -> an Optimizer.
#include <algorithm>
#include <sstream>

#include "optim/adadelta.hpp"
#include "optim/adagrad.hpp"
#include "optim/adam.hpp"
#include "optim/adamax.hpp"
#include "optim/dcasgd.hpp"
#include "optim/ftrl.hpp"
#include "optim/lamb.hpp"
#include "optim/lars.hpp"
#include "optim/nadam.hpp"
#include "optim/optimizer.hpp"
#include "optim/rmsprop.hpp"
#include "optim/sgd.hpp"
#include "optim/sgld.hpp"

namespace dtbench::optim {

namespace {

// Reads section[key] as a number (default when absent); the validator has checked types, but a
// wrong type still gets a message naming the key rather than a JSON library error.
double number(const Json& section, const char* key, double def) {
  if (!section.contains(key)) return def;
  const Json& v = section[key];
  if (!v.is_number()) throw BadInput(std::string("/optimizer/") + key + ": must be a number, got " + v.dump());
  return v.get<double>();
}

bool flag(const Json& section, const char* key, bool def) {
  if (!section.contains(key)) return def;
  const Json& v = section[key];
  if (!v.is_boolean()) throw BadInput(std::string("/optimizer/") + key + ": must be true or false, got " + v.dump());
  return v.get<bool>();
}

std::string known_names() {
  std::string s;
  for (const std::string& n : optimizer_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = {"sgd",     "adam", "adamw", "adamax", "nadam",
                                                 "adagrad", "rmsprop", "adadelta", "ftrl", "sgld",
                                                 "dcasgd",  "lars", "lamb"};
  return names;
}

std::unique_ptr<Optimizer> make_optimizer(const Json& section, ParamTable table, uint64_t seed,
                                          std::shared_ptr<const NoiseSource> sgld_noise) {
  if (!section.is_object()) throw BadInput("/optimizer: must be an object");
  if (!section.contains("name") || !section["name"].is_string()) {
    throw BadInput("/optimizer/name: missing (one of " + known_names() + ")");
  }
  const std::string name = section["name"].get<std::string>();
  const auto& names = optimizer_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    throw BadInput("/optimizer/name: unknown optimizer '" + name + "' (known: " + known_names() + ")");
  }
  if (section.contains("lr")) require_positive(number(section, "lr", 0.0), "/optimizer/lr");

  CommonOptions common;
  common.weight_decay = number(section, "weight_decay", name == "adamw" ? 0.01 : 0.0);
  common.no_decay_bn_bias = flag(section, "no_decay_bn_bias", true);
  common.clip_grad_norm = number(section, "clip_grad_norm", 0.0);
  common.clip_grad_value = number(section, "clip_grad_value", 0.0);

  if (name == "sgd") {
    SgdOptions o;
    o.momentum = number(section, "momentum", o.momentum);
    o.dampening = number(section, "dampening", o.dampening);
    o.nesterov = flag(section, "nesterov", o.nesterov);
    o.decoupled_weight_decay = flag(section, "decoupled_weight_decay", o.decoupled_weight_decay);
    return std::make_unique<Sgd>(std::move(table), common, o);
  }
  if (name == "adam" || name == "adamw") {
    AdamOptions o;
    o.beta1 = number(section, "beta1", o.beta1);
    o.beta2 = number(section, "beta2", o.beta2);
    o.eps = number(section, "eps", o.eps);
    o.decoupled_weight_decay = name == "adamw";
    return std::make_unique<Adam>(std::move(table), common, o);
  }
  if (name == "adamax") {
    AdamaxOptions o;
    o.beta1 = number(section, "beta1", o.beta1);
    o.beta2 = number(section, "beta2", o.beta2);
    o.eps = number(section, "eps", o.eps);
    return std::make_unique<Adamax>(std::move(table), common, o);
  }
  if (name == "nadam") {
    NadamOptions o;
    o.beta1 = number(section, "beta1", o.beta1);
    o.beta2 = number(section, "beta2", o.beta2);
    o.eps = number(section, "eps", o.eps);
    o.momentum_decay = number(section, "momentum_decay", o.momentum_decay);
    return std::make_unique<Nadam>(std::move(table), common, o);
  }
  if (name == "adagrad") {
    AdagradOptions o;
    o.lr_decay = number(section, "lr_decay", o.lr_decay);
    o.initial_accumulator_value = number(section, "initial_accumulator_value", o.initial_accumulator_value);
    o.eps = number(section, "eps", o.eps);
    return std::make_unique<Adagrad>(std::move(table), common, o);
  }
  if (name == "rmsprop") {
    RmspropOptions o;
    o.alpha = number(section, "alpha", o.alpha);
    o.eps = number(section, "eps", o.eps);
    o.momentum = number(section, "momentum", o.momentum);
    o.centered = flag(section, "centered", o.centered);
    return std::make_unique<Rmsprop>(std::move(table), common, o);
  }
  if (name == "adadelta") {
    AdadeltaOptions o;
    o.rho = number(section, "rho", o.rho);
    o.eps = number(section, "eps", o.eps);
    return std::make_unique<Adadelta>(std::move(table), common, o);
  }
  if (name == "ftrl") {
    FtrlOptions o;
    o.l1 = number(section, "l1", o.l1);
    o.l2 = number(section, "l2", o.l2);
    o.beta = number(section, "beta", o.beta);
    o.lr_power = number(section, "lr_power", o.lr_power);
    o.initial_accumulator_value = number(section, "initial_accumulator_value", o.initial_accumulator_value);
    return std::make_unique<Ftrl>(std::move(table), common, o);
  }
  if (name == "sgld") {
    SgldOptions o;
    o.temperature = number(section, "temperature", o.temperature);
    return std::make_unique<Sgld>(std::move(table), common, o, seed, std::move(sgld_noise));
  }
  if (name == "dcasgd") {
    DcasgdOptions o;
    o.momentum = number(section, "momentum", o.momentum);
    o.lambda = number(section, "lambda", o.lambda);
    return std::make_unique<Dcasgd>(std::move(table), common, o);
  }
  if (name == "lars") {
    LarsOptions o;
    o.momentum = number(section, "momentum", o.momentum);
    o.eta = number(section, "eta", o.eta);
    o.eps = number(section, "eps", o.eps);
    o.trust_exclude_bn_bias = flag(section, "trust_exclude_bn_bias", o.trust_exclude_bn_bias);
    return std::make_unique<Lars>(std::move(table), common, o);
  }
  // lamb
  LambOptions o;
  o.beta1 = number(section, "beta1", o.beta1);
  o.beta2 = number(section, "beta2", o.beta2);
  o.eps = number(section, "eps", o.eps);
  o.bias_correction = flag(section, "bias_correction", o.bias_correction);
  o.trust_clip = number(section, "trust_clip", o.trust_clip);
  o.trust_exclude_bn_bias = flag(section, "trust_exclude_bn_bias", o.trust_exclude_bn_bias);
  return std::make_unique<Lamb>(std::move(table), common, o);
}

}  // namespace dtbench::optim
