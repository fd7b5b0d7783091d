#include "optim/options.hpp"

namespace dtbench::optim {

double option_number(const Json& section, const char* key, double def) {
  if (!section.contains(key)) return def;
  const Json& v = section[key];
  if (!v.is_number()) throw BadInput(std::string("/optimizer/") + key + ": must be a number, got " + v.dump());
  return v.get<double>();
}

bool option_flag(const Json& section, const char* key, bool def) {
  if (!section.contains(key)) return def;
  const Json& v = section[key];
  if (!v.is_boolean()) throw BadInput(std::string("/optimizer/") + key + ": must be true or false, got " + v.dump());
  return v.get<bool>();
}

CommonOptions read_common_options(const Json& section, const std::string& name) {
  if (section.contains("lr")) require_positive(option_number(section, "lr", 0.0), "/optimizer/lr");
  CommonOptions c;
  c.weight_decay = option_number(section, "weight_decay", name == "adamw" ? 0.01 : 0.0);
  c.no_decay_bn_bias = option_flag(section, "no_decay_bn_bias", true);
  c.clip_grad_norm = option_number(section, "clip_grad_norm", 0.0);
  c.clip_grad_value = option_number(section, "clip_grad_value", 0.0);
  return c;
}

SgdOptions read_sgd_options(const Json& section) {
  SgdOptions o;
  o.momentum = option_number(section, "momentum", o.momentum);
  o.dampening = option_number(section, "dampening", o.dampening);
  o.nesterov = option_flag(section, "nesterov", o.nesterov);
  o.decoupled_weight_decay = option_flag(section, "decoupled_weight_decay", o.decoupled_weight_decay);
  return o;
}

AdamOptions read_adam_options(const Json& section, const std::string& name) {
  AdamOptions o;
  o.beta1 = option_number(section, "beta1", o.beta1);
  o.beta2 = option_number(section, "beta2", o.beta2);
  o.eps = option_number(section, "eps", o.eps);
  o.decoupled_weight_decay = name == "adamw";
  return o;
}

LarsOptions read_lars_options(const Json& section) {
  LarsOptions o;
  o.momentum = option_number(section, "momentum", o.momentum);
  o.eta = option_number(section, "eta", o.eta);
  o.eps = option_number(section, "eps", o.eps);
  o.trust_exclude_bn_bias = option_flag(section, "trust_exclude_bn_bias", o.trust_exclude_bn_bias);
  return o;
}

LambOptions read_lamb_options(const Json& section) {
  LambOptions o;
  o.beta1 = option_number(section, "beta1", o.beta1);
  o.beta2 = option_number(section, "beta2", o.beta2);
  o.eps = option_number(section, "eps", o.eps);
  o.bias_correction = option_flag(section, "bias_correction", o.bias_correction);
  o.trust_clip = option_number(section, "trust_clip", o.trust_clip);
  o.trust_exclude_bn_bias = option_flag(section, "trust_exclude_bn_bias", o.trust_exclude_bn_bias);
  return o;
}

}  // namespace dtbench::optim
