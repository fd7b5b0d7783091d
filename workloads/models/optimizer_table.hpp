// The optimizer's view of a model's parameter table: names, ranges and the kinds the bias/bn rules read
// (optim/param_table.hpp). Both backends hand it to their optimizers.
#pragma once

#include <vector>

#include "optim/param_table.hpp"
#include "workloads/models/model_spec.hpp"

namespace dtbench::models {

optim::ParamTable optimizer_table(const std::vector<ParamInfo>& params);

}  // namespace dtbench::models
