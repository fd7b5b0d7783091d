#include "optim/scaling.hpp"

#include <cmath>
#include <stdexcept>

#include "core/error.hpp"

namespace dtbench::optim {

std::string_view to_string(ScalingRule rule) {
  switch (rule) {
    case ScalingRule::none: return "none";
    case ScalingRule::linear: return "linear";
    case ScalingRule::sqrt: return "sqrt";
  }
  return "unknown";
}

ScalingRule scaling_rule_from_string(std::string_view text, const std::string& key) {
  for (ScalingRule r : {ScalingRule::none, ScalingRule::linear, ScalingRule::sqrt}) {
    if (to_string(r) == text) return r;
  }
  throw BadInput(key + ": unknown scaling rule '" + std::string(text) + "' (known: none, linear, sqrt)");
}

double scale_lr(double reference_lr, ScalingRule rule, int64_t global_batch, int64_t reference_batch) {
  if (global_batch < 1 || reference_batch < 1) {
    throw std::invalid_argument("scale_lr: batch sizes must be >= 1, got " + std::to_string(global_batch) + " and " +
                                std::to_string(reference_batch));
  }
  const double k = static_cast<double>(global_batch) / static_cast<double>(reference_batch);
  switch (rule) {
    case ScalingRule::none: return reference_lr;
    case ScalingRule::linear: return reference_lr * k;
    case ScalingRule::sqrt: return reference_lr * std::sqrt(k);
  }
  return reference_lr;
}

LrScaling lr_scaling_from_json(const Json& section) {
  LrScaling s;
  if (section.is_null()) return s;
  if (!section.is_object()) throw BadInput("/lr_scaling: must be an object");
  if (section.contains("rule")) {
    if (!section["rule"].is_string()) throw BadInput("/lr_scaling/rule: must be a string");
    s.rule = scaling_rule_from_string(section["rule"].get<std::string>(), "/lr_scaling/rule");
  }
  if (section.contains("reference_batch")) {
    const Json& v = section["reference_batch"];
    if (!v.is_number_integer() || v.get<int64_t>() < 1) {
      throw BadInput("/lr_scaling/reference_batch: must be an integer >= 1, got " + v.dump());
    }
    s.reference_batch = v.get<int64_t>();
  }
  return s;
}

}  // namespace dtbench::optim
