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
#include "optim/options.hpp"
#include "optim/rmsprop.hpp"
#include "optim/sgd.hpp"
#include "optim/sgld.hpp"

namespace dtbench::optim {

namespace {

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
  const CommonOptions common = read_common_options(section, name);

  if (name == "sgd") return std::make_unique<Sgd>(std::move(table), common, read_sgd_options(section));
  if (name == "adam" || name == "adamw")
    return std::make_unique<Adam>(std::move(table), common, read_adam_options(section, name));
  if (name == "adamax") {
    AdamaxOptions o;
    o.beta1 = option_number(section, "beta1", o.beta1);
    o.beta2 = option_number(section, "beta2", o.beta2);
    o.eps = option_number(section, "eps", o.eps);
    return std::make_unique<Adamax>(std::move(table), common, o);
  }
  if (name == "nadam") {
    NadamOptions o;
    o.beta1 = option_number(section, "beta1", o.beta1);
    o.beta2 = option_number(section, "beta2", o.beta2);
    o.eps = option_number(section, "eps", o.eps);
    o.momentum_decay = option_number(section, "momentum_decay", o.momentum_decay);
    return std::make_unique<Nadam>(std::move(table), common, o);
  }
  if (name == "adagrad") {
    AdagradOptions o;
    o.lr_decay = option_number(section, "lr_decay", o.lr_decay);
    o.initial_accumulator_value = option_number(section, "initial_accumulator_value", o.initial_accumulator_value);
    o.eps = option_number(section, "eps", o.eps);
    return std::make_unique<Adagrad>(std::move(table), common, o);
  }
  if (name == "rmsprop") {
    RmspropOptions o;
    o.alpha = option_number(section, "alpha", o.alpha);
    o.eps = option_number(section, "eps", o.eps);
    o.momentum = option_number(section, "momentum", o.momentum);
    o.centered = option_flag(section, "centered", o.centered);
    return std::make_unique<Rmsprop>(std::move(table), common, o);
  }
  if (name == "adadelta") {
    AdadeltaOptions o;
    o.rho = option_number(section, "rho", o.rho);
    o.eps = option_number(section, "eps", o.eps);
    return std::make_unique<Adadelta>(std::move(table), common, o);
  }
  if (name == "ftrl") {
    FtrlOptions o;
    o.l1 = option_number(section, "l1", o.l1);
    o.l2 = option_number(section, "l2", o.l2);
    o.beta = option_number(section, "beta", o.beta);
    o.lr_power = option_number(section, "lr_power", o.lr_power);
    o.initial_accumulator_value = option_number(section, "initial_accumulator_value", o.initial_accumulator_value);
    return std::make_unique<Ftrl>(std::move(table), common, o);
  }
  if (name == "sgld") {
    SgldOptions o;
    o.temperature = option_number(section, "temperature", o.temperature);
    return std::make_unique<Sgld>(std::move(table), common, o, seed, std::move(sgld_noise));
  }
  if (name == "dcasgd") {
    DcasgdOptions o;
    o.momentum = option_number(section, "momentum", o.momentum);
    o.lambda = option_number(section, "lambda", o.lambda);
    return std::make_unique<Dcasgd>(std::move(table), common, o);
  }
  if (name == "lars") return std::make_unique<Lars>(std::move(table), common, read_lars_options(section));
  return std::make_unique<Lamb>(std::move(table), common, read_lamb_options(section));  // lamb
}

}  // namespace dtbench::optim
