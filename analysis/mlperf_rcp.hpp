// MLPerf reference convergence points (RCPs) from a dtbench campaign, for the RCP checker's --custom_rcps
// (mlcommons/logging, mlperf_logging/rcp_checker).
//
// MLPerf judges a submission's convergence against reference runs: for each global batch BS, the epochs
// to the quality target of repeated reference runs. The checker takes their olympic mean (the fastest and
// the slowest run dropped) and fails a submission whose own olympic mean converges significantly faster.
// A dtbench campaign whose runs have an eval.target_accuracy gives exactly these numbers: per point, the
// epoch of each run's first evaluation at or above the target (the record's time_to_accuracy.epoch).
//
// One entry per global batch, named "<benchmark>_ref_<BS>" as MLPerf's own files are:
//   {"Benchmark", "Creator", "When", "Platform", "BS", "Hyperparams", "Epochs to converge": [...]}
// Benchmark is the runs' MLPerf submission_benchmark (config::mllog_benchmark). Only runs that reached the
// target count; a point needs at least 3 of them (the olympic mean drops two) and is otherwise left out,
// with the reason in `skipped`.
#pragma once

#include <string>
#include <vector>

#include "analysis/campaign_data.hpp"
#include "core/json.hpp"

namespace dtbench::analysis {

struct RcpSet {
  Json rcps = Json::object();
  std::vector<std::string> skipped;  // "<point>: <why>", one per point left out
  // "<point>: ...", one per RCP made from fewer runs than the point finished (those that missed the target or
  // diverged have no epochs to converge): the RCP's mean is then the converged runs' alone.
  std::vector<std::string> fewer_runs;
};

// Throws BadInput when the campaign has no run with a target accuracy, mixes benchmarks, or has two
// points with the same global batch (one RCP per batch size: give a campaign whose points differ in it).
RcpSet reference_convergence_points(const CampaignData& c);

}  // namespace dtbench::analysis
