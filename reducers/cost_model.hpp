// The latency-bandwidth (alpha-beta-gamma) cost model of each reducer, fitted to `dtbench allreduce
// --json` sweeps, predicting times at other rank counts and sizes (`dtbench model`,
// reducers/model_command.cpp, also answers the seeds' batch-split question with it).
//
// The model (Hockney's; Thakur, Rabenseifner and Gropp 2005, section 3): sending a message of n bytes
// costs alpha + n beta (alpha: latency, beta: inverse bandwidth), and reducing n bytes locally costs
// n gamma. An algorithm's time is the sum over its critical path: T = A alpha + B beta + C gamma, where
// the coefficients A (messages), B (bytes sent) and C (bytes reduced) come from the algorithm's
// structure (one formula per algorithm, the static cost() next to its run(), with the papers cited
// there; cost_terms below finds it through the registry). Three regimes refine it, each a term with a
// physical meaning, all measured on this machine (BENCHMARKS.md, "Cost model quality"):
// - Protocol switch (LogGP's distinction of short and long messages; Alexandrov et al. 1995): MPI
//   libraries send small messages eagerly and larger ones by a rendezvous handshake (Open MPI's
//   shared-memory transport switches at 4 KiB) whose latency is larger, so messages up to
//   `eager_bytes` count in A with alpha and larger ones in A_rndv with alpha_rndv.
// - Memory bandwidth (the roofline's two ceilings; Williams, Waterman and Patterson 2009): once the
//   buffer outgrows the cache (`cache_bytes`, fitted), copies stream from memory and each byte sent
//   costs beta + beta_mem. Here 2 MiB allreduces run at cache speed and 4 MiB ones 2-3x slower per byte.
// - Oversubscription (Iancu et al. 2010, "Oversubscription on multicore processors"): with more ranks
//   than cores the ranks time-share the cores, so the CPU work of the critical path (copies and
//   reductions) stretches by concurrency/cores (the ranks busy at once on the path), and every message
//   waits for its peer to be scheduled behind the ranks queued on its core: alpha_sched per message
//   and queued rank, ranks/cores - 1 of them (the scheduler's wake-up and time slice, not the transport's).
//   How much of the CPU work stretches is fitted per reducer (`stretch`, in [0, 1]: the factor is
//   1 + stretch (concurrency/cores - 1)): where ranks share a core, part of what they copy was written by
//   a rank on the same core and is read from its cache, and part of the work of one overlaps the other's
//   wait (measured: shared_memory's 16 MiB allreduce takes 1.86x its 2-rank time on 4 ranks and 2 cores,
//   where 1.5x the bytes at half the cores would give 3x).
//
// Fitting (fit_cost_model): repeated sweeps (several files of one rank count) are reduced to one time
// per reducer, rank count and size, the median over the files of each file's median iteration time
// (time_median_us; the mean where a file lacks it): on a shared machine a preempted iteration moves a
// mean, and a disturbed round moves one file, not the median. gamma is fitted once, from the local
// reduction kernel the sweep times at every size (its "reduction" rows: t = t0 + gamma n), because
// reduction is the same loop in every algorithm and is not identifiable from allreduce times alone.
// alpha, alpha_rndv, beta, beta_mem and alpha_sched are then fitted per reducer, by non-negative least
// squares on relative error (weights 1/t^2, so 4 KiB rows count as much as 16 MiB rows). Per reducer
// rather than shared because each implementation pays its own constant costs per message (a segment
// handshake, the MPI library's internal algorithm choice); a shared alpha and beta would misfit every
// reducer a little. cache_bytes too is per reducer (the size at which its working set leaves the cache
// differs: whole buffers per step for the butterfly, 1/p chunks for the ring): the threshold between two
// adjacent fitted sizes (or none) that minimises its loss; `stretch` likewise, over 0, 0.1, ..., 1 (1 when
// no fitted row has more ranks than cores). A term whose regime the
// fit data never reaches (no message above the eager limit, no rank count above the cores, no size
// above the cache) is not identifiable: its coefficient stays 0, except that a missing latency class
// takes the other class's alpha.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "reducers/cost_terms.hpp"
#include "reducers/reducer_options.hpp"

namespace dtbench {

struct CostParams {
  double alpha = 0;        // seconds per eager message
  double alpha_rndv = 0;   // seconds per rendezvous message
  double beta = 0;         // seconds per byte sent
  double gamma = 0;        // seconds per byte reduced
  double beta_mem = 0;     // extra seconds per byte sent once the buffer exceeds the cache
  double alpha_sched = 0;  // extra seconds per message and per rank queued on a core beside it
  double cache_bytes = 0;  // buffers above it pay beta_mem; 0: no memory regime
  double stretch = 1;      // the share of the CPU work that time-sharing a core stretches, in [0, 1]
};

// A network's alpha, beta and gamma as the batch split and the parallelism table report them.
Json link_json(const CostParams& link);
// The link within the nodes of `ranks_per_node` ranks, as the batch split and the parallelism table report it.
Json intra_node_json(int ranks_per_node, const CostParams& link);

// Which regimes an allreduce runs in: the ranks queued beside each one on its core, ranks / cores - 1
// when ranks outnumber cores (a message waits for its peer behind them), the time-sharing factor
// 1 + stretch (max(1, concurrency / cores) - 1) of its critical path, and whether its buffer exceeds the cache.
struct Regime {
  double queued = 0;
  double share = 1;
  bool memory = false;
};
// cores <= 0: unknown, taken as one core per rank.
Regime regime(const CostTerms& t, int ranks, int cores, double bytes, double cache_bytes, double stretch = 1);

inline double predict_seconds(const CostTerms& t, const CostParams& c, const Regime& r = {}) {
  const double messages = t.alpha + t.alpha_rndv;
  return t.alpha * c.alpha + t.alpha_rndv * c.alpha_rndv + r.queued * messages * c.alpha_sched +
         r.share * (t.beta * (c.beta + (r.memory ? c.beta_mem : 0)) + t.gamma * c.gamma);
}

// `t` priced on `link` with one rank per core (cores 0 in regime(): no rank queued, nothing stretched, whatever
// the rank count): the memory regime applies when the buffer moved (`buffer_bytes`) exceeds the link's cache (a
// fitted profile's; the published networks have none), as the fit priced it.
inline double link_seconds(const CostTerms& t, const CostParams& link, double buffer_bytes) {
  return predict_seconds(t, link, regime(t, /*ranks=*/1, /*cores=*/0, buffer_bytes, link.cache_bytes, link.stretch));
}

// The largest payload Open MPI's shared-memory transport sends eagerly: its btl_vader_eager_limit is
// 4096 bytes including the message header; 4064-byte payloads measured eager, 4096-byte ones not.
constexpr double kDefaultEagerBytes = 4064;

// The formula of `reducer` (its registry entry's cost) for `bytes` on `ranks` ranks; BadInput for a
// reducer without one.
CostTerms cost_terms(const std::string& reducer, int ranks, double bytes, const ReducerOptions& options,
                     double eager_bytes = kDefaultEagerBytes);

// The seconds of `reducer`'s allreduce priced on `link`, one rank per core. With `intra` (hierarchical only:
// BadInput for another reducer), two links: the phase within the nodes (options.ranks_per_node ranks each) on
// `intra`, the leaders' phase on `link`, the network between the nodes (Hierarchical::cost_parts).
double allreduce_seconds(const std::string& reducer, int ranks, double bytes, const ReducerOptions& options,
                         double eager_bytes, const CostParams& link, const std::optional<CostParams>& intra = {});

// One measured time: the median over the sweep files that hold this reducer, rank count, node size and size.
struct SweepRow {
  std::string reducer;
  int ranks = 0;
  int cores = 0;  // of the machine that measured it (the file's provenance; 0: unknown, taken as ranks)
  // hierarchical: the ranks per node its file ran with (0: one node of all the ranks; sweep_rows says how it
  // is read); 0 for every other reducer
  int ranks_per_node = 0;
  double bytes = 0, seconds = 0;
};

struct FittedModel {
  // The sweeps' segment sizes, server count and hierarchical leader; ranks_per_node is the hierarchical rows'
  // node size, what predict() assumes (0: one node).
  ReducerOptions options;
  double eager_bytes = kDefaultEagerBytes;
  double gamma = 0;                                // shared, from the reduction rows
  std::map<std::string, CostParams> params;        // per reducer (gamma repeated in each)
  std::map<std::string, double> min_bytes, max_bytes;  // fitted size range per reducer
  std::vector<int> ranks;                          // rank counts present in the fit data
  std::map<std::string, double> rms_rel_error;     // of the fit on its own rows
  // The predicted time of `reducer` (one of params) on `ranks` ranks sharing `cores` cores.
  double predict(const std::string& reducer, int ranks, int cores, double bytes) const;
  // The same for a measured row, with the row's own nodes, and the formula's terms for it.
  double predict(const SweepRow& row) const;
  CostTerms terms(const SweepRow& row) const;
  // The hierarchical reducer priced from its parts' fits instead of its own (Hierarchical::cost_parts): the
  // phase within the nodes with parameter_server's parameters (on one node it is that algorithm with one
  // server: every buffer into one rank and the sum back out), the leaders' phase with options.leader's. A
  // prediction that never saw a hierarchical time. BadInput unless both were fitted.
  double predict_hierarchical_from_parts(int ranks, int cores, double bytes, int ranks_per_node) const;
  Json to_json() const;
};

// The rows of `dtbench allreduce --json` documents (wrong results and rows above max_bytes left out;
// 0: no limit), and their options; `what` names the files in messages ("fit file"). BadInput when a
// document is not an allreduce sweep (check_sweep_document: a field missing, of the wrong type or out of
// range) or the documents mix segment sizes, server counts or hierarchical leaders.
// A hierarchical row's nodes: the file's /options/ranks_per_node where it is > 0, else the launcher's nodes
// (the file's /nodes) where they are the formula's layout, consecutive ranks g per node (the last may hold
// fewer): g, and 0 for one node of every rank (also for a ranks_per_node of at least the ranks). Other
// placements (round-robin, say) have no place in the formula, so such a file's hierarchical rows are left out.
// `options.leader` and `options.ranks_per_node` are those of the first file with hierarchical rows; a later
// one with another leader is BadInput.
// `left_out`, when given, says which rows were left out and why ("rows left out: 12 of 1 rank, ...").
std::vector<SweepRow> sweep_rows(const std::vector<Json>& sweeps, const std::string& what, ReducerOptions& options,
                                 double max_bytes = 0, std::string* left_out = nullptr);

// Fits from the documents `dtbench allreduce --json` writes; BadInput when they hold no usable rows,
// mix segment sizes or server counts, or are not allreduce sweeps.
// Rows above max_bytes are left out (a shared machine measures large transfers less reliably).
FittedModel fit_cost_model(const std::vector<Json>& sweeps, double eager_bytes = kDefaultEagerBytes,
                           double max_bytes = 0 /* no limit */);

// Per reducer, the root mean square of (predicted - measured) / measured over `rows` (reducers the
// model does not know are left out).
std::map<std::string, double> rms_rel_error(const FittedModel& m, const std::vector<SweepRow>& rows);

// The rms relative error of predict_hierarchical_from_parts on the hierarchical rows of `rows`; -1 when there
// are none.
double rms_rel_error_from_parts(const FittedModel& m, const std::vector<SweepRow>& rows);

// BadInput naming `what` unless sweeps of options `o` (their rows `rows`) were taken as the fit's were: the same
// segment sizes and servers, and the same hierarchical leader where both have hierarchical rows.
void check_options_as_fitted(const FittedModel& m, const ReducerOptions& o, const std::vector<SweepRow>& rows,
                             const std::string& what);

// The held-out error: rms_rel_error on the rows of other sweeps (every size; BadInput when their
// options differ from the fit's or no row belongs to a fitted reducer).
std::map<std::string, double> holdout_rms_rel_error(const FittedModel& m, const std::vector<Json>& sweeps);

// A sweep row's time: the median per-iteration time where the sweep recorded it (robust to the
// preemptions of a shared machine), else the mean.
double row_seconds(const Json& row);

}  // namespace dtbench
