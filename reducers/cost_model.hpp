// The latency-bandwidth (alpha-beta-gamma) cost model of each reducer, fitted to a `dtbench allreduce
// --json` sweep, predicting times at other rank counts and sizes (`dtbench model`,
// reducers/model_command.cpp, also answers the seeds' batch-split question with it).
//
// The model (Hockney's; Thakur, Rabenseifner and Gropp 2005, section 3): sending a message of n bytes
// costs alpha + n beta (alpha: latency, beta: inverse bandwidth), and reducing n bytes locally costs
// n gamma. An algorithm's time is the sum over its critical path: T = A alpha + B beta + C gamma, where
// the coefficients A (messages), B (bytes sent) and C (bytes reduced) come from the algorithm's
// structure (one formula per algorithm, the static cost() next to its run(), with the papers cited
// there; cost_terms below finds it through the registry). One
// refinement: MPI libraries send small messages eagerly and larger ones by a rendezvous handshake
// (Open MPI's shared-memory transport switches at 4 KiB), whose latency is several times larger, so
// messages up to `eager_bytes` count in A and larger ones in A_rndv with their own alpha_rndv (the
// protocol switch of the LogGP family of models; Alexandrov et al. 1995). Without it one alpha cannot
// fit both 4 KiB and 16 KiB allreduces on this machine.
//
// Fitting (fit_cost_model) uses each row's median per-iteration time (time_median_us; the mean where a
// file lacks it): on a shared machine a few preempted iterations move the mean, not the median.
// gamma is fitted once, from the local reduction kernel that the sweep times
// at every size (its "reduction" rows: t = t0 + gamma n), because reduction is the same loop in every
// algorithm and is not identifiable from allreduce times alone (B and C are proportional to each other
// within one algorithm). alpha, alpha_rndv and beta are then fitted per reducer, by least squares on
// relative error (weights 1/t^2, so 4 KiB rows count as much as 64 MiB rows), all >= 0. Per reducer
// rather than shared because each implementation pays its own constant costs per message (a segment
// handshake, the MPI library's internal algorithm choice, the thread handoff); a shared alpha and beta
// would mix those and misfit every reducer a little. Rows of several files (several rank counts) fit
// together. A latency class absent from the fit data (say, no message above 4 KiB) takes the other
// class's alpha.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "reducers/cost_terms.hpp"
#include "reducers/reducer_options.hpp"

namespace dtbench {

struct CostParams {
  double alpha = 0;       // seconds per eager message
  double alpha_rndv = 0;  // seconds per rendezvous message
  double beta = 0;        // seconds per byte sent
  double gamma = 0;       // seconds per byte reduced
};

inline double predict_seconds(const CostTerms& t, const CostParams& c) {
  return t.alpha * c.alpha + t.alpha_rndv * c.alpha_rndv + t.beta * c.beta + t.gamma * c.gamma;
}

// The largest payload Open MPI's shared-memory transport sends eagerly: its btl_vader_eager_limit is
// 4096 bytes including the message header; 4064-byte payloads measured eager, 4096-byte ones not.
constexpr double kDefaultEagerBytes = 4064;

// The formula of `reducer` (its registry entry's cost) for `bytes` on `ranks` ranks; BadInput for a
// reducer without one.
CostTerms cost_terms(const std::string& reducer, int ranks, double bytes, const ReducerOptions& options,
                     double eager_bytes = kDefaultEagerBytes);

struct FittedModel {
  ReducerOptions options;                          // the sweep's segment size and server count
  double eager_bytes = kDefaultEagerBytes;
  double gamma = 0;                                // shared, from the reduction rows
  std::map<std::string, CostParams> params;        // per reducer (gamma repeated in each)
  std::map<std::string, double> min_bytes, max_bytes;  // fitted size range per reducer
  std::vector<int> ranks;                          // rank counts present in the fit data
  std::map<std::string, double> rms_rel_error;     // of the fit on its own rows
  Json to_json() const;
};

// Fits from the documents `dtbench allreduce --json` writes; BadInput when they hold no usable rows,
// mix segment sizes or server counts, or are not allreduce sweeps.
// Rows above max_bytes are left out (a shared machine measures large transfers less reliably).
FittedModel fit_cost_model(const std::vector<Json>& sweeps, double eager_bytes = kDefaultEagerBytes,
                           double max_bytes = 0 /* no limit */);

// A sweep row's time: the median per-iteration time where the sweep recorded it (robust to the
// preemptions of a shared machine), else the mean.
double row_seconds(const Json& row);

// j[key] of a sweep document; BadInput "<where>: missing \"key\"" when absent.
const Json& sweep_field(const Json& j, const char* key, const std::string& where);

}  // namespace dtbench
