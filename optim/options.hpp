// Reading the "/optimizer" config section into option structs (optim/registry.cpp). make_optimizer (host)
// and make_gpu_optimizer (optim/gpu) both read through these, so both backends take the same keys
// with the same defaults: an absent key takes the default of the section's optimizer in the registry. A
// value of the wrong type gets BadInput naming the key (the config validator has normally caught it
// already). The section must name a registered optimizer.
#pragma once

#include <string>

#include "core/json.hpp"
#include "optim/adam.hpp"
#include "optim/lamb.hpp"
#include "optim/lars.hpp"
#include "optim/optimizer.hpp"
#include "optim/sgd.hpp"

namespace dtbench::optim {

// The options every optimizer shares. Also checks a given lr.
CommonOptions read_common_options(const Json& section);
SgdOptions read_sgd_options(const Json& section);
AdamOptions read_adam_options(const Json& section, const std::string& name);  // adam or adamw
LarsOptions read_lars_options(const Json& section);
LambOptions read_lamb_options(const Json& section);

}  // namespace dtbench::optim
