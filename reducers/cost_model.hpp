// `dtbench model`: the latency-bandwidth (alpha-beta-gamma) cost model of each reducer, fitted to a
// `dtbench allreduce --json` sweep, predicting times at other rank counts and sizes, and answering the
// seeds' batch-split question.
//
// The model (Hockney's; Thakur, Rabenseifner and Gropp 2005, section 3): sending a message of n bytes
// costs alpha + n beta (alpha: latency, beta: inverse bandwidth), and reducing n bytes locally costs
// n gamma. An algorithm's time is the sum over its critical path: T = A alpha + B beta + C gamma, where
// the coefficients A (messages), B (bytes sent) and C (bytes reduced) come from the algorithm's
// structure (cost_terms below, one formula per algorithm, with the papers cited there). One
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
#include "reducers/reducer.hpp"

namespace CLI {
class App;
}

namespace dtbench {

// T = alpha * CostTerms::alpha + beta * CostTerms::beta + gamma * CostTerms::gamma.
struct CostTerms {
  double alpha = 0;       // messages of at most eager_bytes on the critical path
  double alpha_rndv = 0;  // larger messages on the critical path
  double beta = 0;        // bytes sent on the critical path
  double gamma = 0;       // bytes reduced on the critical path
  // Counts `count` messages of `bytes` each into the right latency class.
  void messages(double count, double bytes, double eager_bytes) { (bytes <= eager_bytes ? alpha : alpha_rndv) += count; }
};

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

// The formula of each reducer (names as in reducer_names()) for `bytes` on `ranks` ranks.
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

// Registers the `model` subcommand.
void add_model_command(CLI::App& app);

}  // namespace dtbench
