// MLPerf names that more than one module derives from a run's config: the trainer's :::MLLOG file and the
// RCP export of `dtbench table --rcps` must agree on them.
#pragma once

#include <cstdint>
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

// The steps of a warmup given in epochs, as the schedule warms up for them: rounded to the nearest step. The one
// rule for both the schedule (optim's read_warmup) and the RCP export of a record written before it kept its
// warmup steps (extra.warmup_steps). `epochs` x `steps_per_epoch` must be at most 2^62 (checked by the callers:
// llround beyond int64 is undefined).
int64_t warmup_steps_of_epochs(double epochs, int64_t steps_per_epoch);

}  // namespace dtbench
