// Learning-rate scaling rules for data-parallel batch-size sweeps.
//
// A config states a reference LR at a reference batch (e.g. 0.1 at 256, Goyal et al. 2017); each run
// of a sweep derives its peak LR from its global batch B:
//     linear: eta = eta_ref * B / B_ref      (Goyal et al. 2017; the seeds' "eta^ = K eta")
//     sqrt:   eta = eta_ref * sqrt(B / B_ref) (Krizhevsky 2014; Hoffer et al. 2017: keeps the update
//                                              variance constant)
//     none:   eta = eta_ref
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/json.hpp"

namespace dtbench::optim {

enum class ScalingRule { none, linear, sqrt };

std::string_view to_string(ScalingRule rule);
// Throws BadInput naming `key` for anything but "none", "linear", "sqrt".
ScalingRule scaling_rule_from_string(std::string_view text, const std::string& key);

double scale_lr(double reference_lr, ScalingRule rule, int64_t global_batch, int64_t reference_batch);

struct LrScaling {
  ScalingRule rule = ScalingRule::none;
  int64_t reference_batch = 256;
};

// Reads the resolved "/lr_scaling" section (absent keys take the defaults; a null or missing section
// means no scaling). Throws BadInput naming the key.
LrScaling lr_scaling_from_json(const Json& section);

}  // namespace dtbench::optim
