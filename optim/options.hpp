// Reading the resolved "/optimizer" config section into option structs. make_optimizer (host) and
// make_gpu_optimizer (workloads/gpu) both read through these, so both backends take the same keys with the
// same defaults. A value of the wrong type gets BadInput naming the key (the config validator has normally
// caught it already).
#pragma once

#include <string>

#include "core/json.hpp"
#include "optim/adam.hpp"
#include "optim/lamb.hpp"
#include "optim/lars.hpp"
#include "optim/optimizer.hpp"
#include "optim/sgd.hpp"

namespace dtbench::optim {

// section[key] as a number or a boolean; def when absent.
double option_number(const Json& section, const char* key, double def);
bool option_flag(const Json& section, const char* key, bool def);

// The options every optimizer shares; weight decay defaults to 0.01 for adamw, else 0. Also checks a given lr.
CommonOptions read_common_options(const Json& section, const std::string& name);
SgdOptions read_sgd_options(const Json& section);
AdamOptions read_adam_options(const Json& section, const std::string& name);  // adam or adamw
LarsOptions read_lars_options(const Json& section);
LambOptions read_lamb_options(const Json& section);

}  // namespace dtbench::optim
