// The "/reducer" section of the run-config schema: which allreduce algorithm and its settings.
#pragma once

#include "core/config_spec.hpp"

namespace dtbench {

config::Node reducer_schema();

}  // namespace dtbench
