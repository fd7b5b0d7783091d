// MLPerf names that more than one module derives from a run's config: the trainer's :::MLLOG file and the
// RCP export of `dtbench table --rcps` must agree on them.
#pragma once

#include <string>

#include "core/json.hpp"

namespace dtbench {

// MLPerf's submission_benchmark of a run: /mllog/submission_benchmark when set, else "resnet" for the
// ResNets (the name MLPerf's rules know) and the arch's own name for the others. Configs without an mllog
// section (records written before it existed) take the default.
std::string mlperf_benchmark(const Json& config);

// MLPerf's submission_platform of a run: /mllog/submission_platform when set, else "<ranks>x<processor>"
// (MLPerf's "8xNVIDIA A100"): the first GPU's name for the gpu backend, the CPU's model otherwise, both
// from a provenance document (core/provenance.hpp: the running process's, or a record's).
std::string mlperf_platform(const Json& config, int ranks, const Json& provenance);

}  // namespace dtbench
