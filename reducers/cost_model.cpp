#include "reducers/cost_model.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "reducers/allreduce_bench.hpp"
#include "reducers/exchange.hpp"
#include "reducers/fold.hpp"

namespace dtbench {
namespace {

double log2_int(int p) { return std::log2(static_cast<double>(p)); }

// Messages a transfer of `elems` floats is cut into (the reducers' segmenting, reducers/exchange.hpp).
double segments(double elems, const ReducerOptions& o) {
  return static_cast<double>(segment_count(static_cast<size_t>(std::ceil(elems)), o));
}

// The binary heap tree (reducers/tree.cpp) with every message costing one unit: the number of messages
// on the critical path of the reduce (each costs alpha + n beta + n gamma) and of the broadcast (alpha
// + n beta). A node receives its left, then its right child's sum; it sends to its left, then its right
// child. Exact for the heap shape of any p, where "2 log2 p" is only the full-tree value.
void tree_depths(int p, double& reduce_msgs, double& bcast_msgs) {
  std::vector<double> done(static_cast<size_t>(p), 0.0), ready(static_cast<size_t>(p), 0.0);
  for (int i = p - 1; i >= 0; --i) {
    double t = 0;
    for (int child : {2 * i + 1, 2 * i + 2})
      if (child < p) t = std::max(t, done[static_cast<size_t>(child)]) + 1;
    done[static_cast<size_t>(i)] = t;
  }
  bcast_msgs = 0;
  for (int i = 0; i < p; ++i) {
    int k = 0;
    for (int child : {2 * i + 1, 2 * i + 2})
      if (child < p) ready[static_cast<size_t>(child)] = ready[static_cast<size_t>(i)] + (++k);
    bcast_msgs = std::max(bcast_msgs, ready[static_cast<size_t>(i)]);
  }
  reduce_msgs = done[0];
}

}  // namespace

CostTerms cost_terms(const std::string& reducer, int p, double n, const ReducerOptions& o, double eager) {
  CostTerms t;
  if (p <= 1 || n <= 0) return t;
  const double P = p, elems = n / sizeof(float);
  const int pof2 = largest_pof2(p);
  const double Q = pof2, lgQ = log2_int(pof2);
  const bool folded = pof2 != p;

  if (reducer == "ring") {
    // Patarasuk and Yuan 2009: 2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma; each of the 2(p-1)
    // steps sends its chunk of n/p bytes as S segments, so 2(p-1) S messages of n/(pS) bytes.
    const double S = segments(std::ceil(elems / P), o);
    t.messages(2 * (P - 1) * S, n / P / S, eager);
    t.beta = 2 * (P - 1) / P * n;
    t.gamma = (P - 1) / P * n;
  } else if (reducer == "butterfly") {
    // Recursive doubling (Thakur et al. 2005): lg p (alpha + n beta + n gamma), plus, for a
    // non-power-of-two p, the fold: one full buffer in (reduced) and one out (section 4.1).
    const double S = segments(elems, o);
    t.messages((lgQ + (folded ? 2 : 0)) * S, n / S, eager);
    t.beta = lgQ * n + (folded ? 2 * n : 0);
    t.gamma = lgQ * n + (folded ? n : 0);
  } else if (reducer == "halving_doubling" || reducer == "mpi") {
    // Rabenseifner (Thakur et al. 2005, section 4.5): 2 lg p alpha + 2 (p-1)/p n beta + (p-1)/p n gamma,
    // plus the fold as above. Step j of the halving (and of the doubling) moves n / 2^(j+1) bytes.
    // "mpi" is modelled with the same formula: MPICH's and Open MPI's long-message choice; its own
    // alphas and beta absorb the difference in the fit. It does not segment.
    const bool seg = reducer != "mpi";
    for (int j = 0; j < static_cast<int>(lgQ); ++j) {
      const double part = n / std::ldexp(2.0, j), S = seg ? segments(part / sizeof(float), o) : 1;
      t.messages(2 * S, part / S, eager);
    }
    t.beta = 2 * (Q - 1) / Q * n;
    t.gamma = (Q - 1) / Q * n;
    if (folded) {
      const double S = seg ? segments(elems, o) : 1;
      t.messages(2 * S, n / S, eager);
      t.beta += 2 * n;
      t.gamma += n;
    }
  } else if (reducer == "tree") {
    // Reduce then broadcast down a binary tree of depth floor(lg p): about 2 lg p messages each way
    // (the seeds' "2 log2 N"), each a full buffer: exact message counts from tree_depths().
    double up = 0, down = 0;
    tree_depths(p, up, down);
    t.messages(up + down, n, eager);
    t.beta = (up + down) * n;
    t.gamma = up * n;
  } else if (reducer == "parameter_server") {
    // S servers each own n/S bytes. Push: p-1 rounds, each one shard of n/S bytes into every server
    // (alpha + n/S beta + n/S gamma); pull: p-1 rounds of n/S bytes out. For S = 1 the server's link
    // carries 2(p-1) n bytes, the bottleneck of the single server; for S = p it is the ring's volume.
    const double S = std::min(o.servers, p);
    t.messages(2 * (P - 1), n / S, eager);
    t.beta = 2 * (P - 1) * n / S;
    t.gamma = (P - 1) * n / S;
  } else {
    throw BadInput("cost model: no formula for reducer '" + reducer + "'");
  }
  return t;
}

// ---- fitting --------------------------------------------------------------------------------------------

namespace {

// Solves the k x k system A x = b by Gaussian elimination with partial pivoting; false if singular.
bool solve(std::vector<std::vector<double>> A, std::vector<double> b, std::vector<double>& x) {
  const size_t k = b.size();
  for (size_t c = 0; c < k; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < k; ++r)
      if (std::abs(A[r][c]) > std::abs(A[piv][c])) piv = r;
    if (!(std::abs(A[piv][c]) > 1e-300)) return false;
    std::swap(A[c], A[piv]);
    std::swap(b[c], b[piv]);
    for (size_t r = c + 1; r < k; ++r) {
      const double f = A[r][c] / A[c][c];
      for (size_t j = c; j < k; ++j) A[r][j] -= f * A[c][j];
      b[r] -= f * b[c];
    }
  }
  x.assign(k, 0.0);
  for (size_t c = k; c-- > 0;) {
    double v = b[c];
    for (size_t j = c + 1; j < k; ++j) v -= A[c][j] * x[j];
    x[c] = v / A[c][c];
  }
  return true;
}

// Weighted non-negative least squares, y ~ sum_j X[j] c_j with c >= 0, for a handful of unknowns: the
// unconstrained fit on every subset of the columns, keeping the best feasible one (exact for k <= 3).
// Columns are scaled to unit weighted norm first: alphas (~1e-6 s) and betas (~1e-10 s/B) differ by
// orders of magnitude. A column that is all zero keeps coefficient 0.
std::vector<double> fit_nonneg(const std::vector<std::vector<double>>& X, const std::vector<double>& y,
                               const std::vector<double>& w) {
  const size_t k = X.size(), m = y.size();
  std::vector<double> scale(k, 0.0);
  for (size_t j = 0; j < k; ++j) {
    for (size_t i = 0; i < m; ++i) scale[j] += w[i] * X[j][i] * X[j][i];
    scale[j] = std::sqrt(scale[j]);
  }
  auto loss = [&](const std::vector<double>& c) {
    double l = 0;
    for (size_t i = 0; i < m; ++i) {
      double pred = 0;
      for (size_t j = 0; j < k; ++j) pred += X[j][i] * c[j];
      l += w[i] * (pred - y[i]) * (pred - y[i]);
    }
    return l;
  };
  std::vector<double> best(k, 0.0);
  double best_loss = loss(best);
  for (unsigned mask = 1; mask < (1u << k); ++mask) {
    std::vector<size_t> cols;
    for (size_t j = 0; j < k; ++j)
      if ((mask >> j & 1u) && scale[j] > 0) cols.push_back(j);
    if (cols.size() != static_cast<size_t>(__builtin_popcount(mask))) continue;
    const size_t q = cols.size();
    std::vector<std::vector<double>> A(q, std::vector<double>(q, 0.0));
    std::vector<double> rhs(q, 0.0), x;
    for (size_t a = 0; a < q; ++a) {
      for (size_t i = 0; i < m; ++i) rhs[a] += w[i] * X[cols[a]][i] / scale[cols[a]] * y[i];
      for (size_t b = 0; b < q; ++b)
        for (size_t i = 0; i < m; ++i)
          A[a][b] += w[i] * X[cols[a]][i] / scale[cols[a]] * X[cols[b]][i] / scale[cols[b]];
    }
    if (!solve(A, rhs, x)) continue;
    std::vector<double> c(k, 0.0);
    bool feasible = true;
    for (size_t a = 0; a < q; ++a) {
      c[cols[a]] = x[a] / scale[cols[a]];
      feasible = feasible && c[cols[a]] >= 0;
    }
    if (!feasible) continue;
    const double l = loss(c);
    if (l < best_loss) best_loss = l, best = c;
  }
  return best;
}

// A row's time: the median per-iteration time where the sweep recorded it (robust to the preemptions
// of a shared machine), else the mean.
double row_seconds(const Json& r) {
  return (r.contains("time_median_us") ? r.at("time_median_us") : r.at("time_us")).get<double>() * 1e-6;
}

const Json& field(const Json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw BadInput(where + ": missing \"" + key + "\"");
  return j.at(key);
}

}  // namespace

Json FittedModel::to_json() const {
  Json p = Json::object();
  for (const auto& [name, c] : params)
    p[name] = {{"alpha_us", c.alpha * 1e6},
               {"alpha_rndv_us", c.alpha_rndv * 1e6},
               {"beta_ns_per_byte", c.beta * 1e9},
               {"gamma_ns_per_byte", c.gamma * 1e9},
               {"fitted_bytes", {min_bytes.at(name), max_bytes.at(name)}},
               {"rms_rel_error", rms_rel_error.at(name)}};
  return {{"gamma_ns_per_byte", gamma * 1e9},
          {"eager_bytes", eager_bytes},
          {"segment_bytes", options.segment_bytes},
          {"small_segment_bytes", options.small_segment_bytes},
          {"small_transfer_bytes", options.small_transfer_bytes},
          {"servers", options.servers},
          {"ranks", ranks},
          {"reducers", p}};
}

FittedModel fit_cost_model(const std::vector<Json>& sweeps, double eager_bytes, double max_bytes) {
  if (sweeps.empty()) throw BadInput("cost model: no sweep to fit (give --fit FILE)");
  FittedModel m;
  m.eager_bytes = eager_bytes;
  bool first = true;
  struct Row {
    std::string reducer;
    int ranks;
    double bytes, seconds;
  };
  std::vector<Row> rows;
  std::vector<double> red_x, red_y;
  for (size_t f = 0; f < sweeps.size(); ++f) {
    const Json& doc = sweeps[f];
    const std::string where = "fit file " + std::to_string(f + 1);
    if (!doc.is_object() || doc.value("kind", "") != "dtbench.allreduce")
      throw BadInput(where + ": not a `dtbench allreduce --json` file (\"kind\" is not \"dtbench.allreduce\")");
    const Json& opt = field(doc, "options", where);
    ReducerOptions o;
    o.segment_bytes = field(opt, "segment_bytes", where + " /options").get<size_t>();
    o.small_segment_bytes = opt.value("small_segment_bytes", o.small_segment_bytes);
    o.small_transfer_bytes = opt.value("small_transfer_bytes", o.small_transfer_bytes);
    o.servers = field(opt, "servers", where + " /options").get<int>();
    if (first) {
      m.options = o;
      first = false;
    } else if (o.segment_bytes != m.options.segment_bytes || o.servers != m.options.servers ||
               o.small_segment_bytes != m.options.small_segment_bytes ||
               o.small_transfer_bytes != m.options.small_transfer_bytes) {
      throw BadInput(where + ": /options (segment sizes or servers) differ from the first file's; fit sweeps "
                     "taken with the same options");
    }
    const int ranks = field(doc, "ranks", where).get<int>();
    if (std::find(m.ranks.begin(), m.ranks.end(), ranks) == m.ranks.end()) m.ranks.push_back(ranks);
    for (const Json& r : field(doc, "rows", where)) {
      if (r.at("wrong").get<uint64_t>() != 0) continue;  // a wrong result's time means nothing
      if (max_bytes > 0 && r.at("bytes").get<double>() > max_bytes) continue;
      rows.push_back({r.at("reducer").get<std::string>(), ranks, r.at("bytes").get<double>(),
                      row_seconds(r)});
    }
    for (const Json& r : field(doc, "reduction", where)) {
      red_x.push_back(r.at("bytes").get<double>());
      red_y.push_back(row_seconds(r));
    }
  }
  // gamma: slope of the reduction kernel's time, t = t0 + gamma n, relative-error weights.
  {
    std::vector<double> ones(red_x.size(), 1.0), w(red_x.size());
    for (size_t i = 0; i < red_x.size(); ++i) w[i] = red_y[i] > 0 ? 1.0 / (red_y[i] * red_y[i]) : 0.0;
    m.gamma = fit_nonneg({ones, red_x}, red_y, w)[1];
  }
  std::map<std::string, std::vector<const Row*>> by_reducer;
  for (const auto& r : rows)
    if (r.bytes > 0 && r.ranks > 1 && r.seconds > 0) by_reducer[r.reducer].push_back(&r);
  if (by_reducer.empty()) throw BadInput("cost model: the fit files hold no rows with more than one rank");
  for (const auto& [name, rs] : by_reducer) {
    std::vector<double> xa, xr, xb, y, w;
    double lo = std::numeric_limits<double>::max(), hi = 0;
    for (const Row* r : rs) {
      CostTerms t = cost_terms(name, r->ranks, r->bytes, m.options, m.eager_bytes);
      xa.push_back(t.alpha);
      xr.push_back(t.alpha_rndv);
      xb.push_back(t.beta);
      y.push_back(r->seconds - t.gamma * m.gamma);
      w.push_back(1.0 / (r->seconds * r->seconds));
      lo = std::min(lo, r->bytes);
      hi = std::max(hi, r->bytes);
    }
    CostParams c;
    c.gamma = m.gamma;
    std::vector<double> coef = fit_nonneg({xa, xr, xb}, y, w);
    c.alpha = coef[0];
    c.alpha_rndv = coef[1];
    c.beta = coef[2];
    const bool any_eager = std::any_of(xa.begin(), xa.end(), [](double v) { return v > 0; });
    const bool any_rndv = std::any_of(xr.begin(), xr.end(), [](double v) { return v > 0; });
    if (!any_eager) c.alpha = c.alpha_rndv;
    if (!any_rndv) c.alpha_rndv = c.alpha;
    double sq = 0;
    for (const Row* r : rs) {
      double pred = predict_seconds(cost_terms(name, r->ranks, r->bytes, m.options, m.eager_bytes), c);
      sq += std::pow((pred - r->seconds) / r->seconds, 2);
    }
    m.params[name] = c;
    m.min_bytes[name] = lo;
    m.max_bytes[name] = hi;
    m.rms_rel_error[name] = std::sqrt(sq / static_cast<double>(rs.size()));
  }
  return m;
}

// ---- the command ------------------------------------------------------------------------------------------

namespace {

struct CliOptions {
  std::vector<std::string> fit;
  std::string ranks = "2,16,256,4096";
  std::string bytes = "100M";
  int batch = 1024;
  double compute_us_per_image = -1;
  std::string model_bytes;
  std::string nodes = "2,16,512,1024";
  std::string check;
  double tolerance = 0.25;
  std::string eager = "4064";
  std::string fit_max;
  std::string json;
};

// The core reader, with the option that named the file in front of its messages.
Json read_option_file(const std::string& path, const std::string& option) {
  try {
    return read_json_file(path, "file");
  } catch (const BadInput& e) {
    throw BadInput(option + ": " + e.what());
  }
}

std::vector<int> parse_int_list(const std::string& text, const std::string& option) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(item, &used);
    } catch (...) {
      used = 0;
    }
    if (used != item.size() || item.empty() || v < 1 || v > (1 << 24))
      throw BadInput(option + ": '" + item + "' is not a positive integer (in '" + text + "')");
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) throw BadInput(option + ": empty list");
  return out;
}

void run_command(const CliOptions& cli) {
  if (cli.fit.empty()) throw BadInput("--fit: give at least one `dtbench allreduce --json` file");
  const std::vector<int> ranks = parse_int_list(cli.ranks, "--ranks");
  const double bytes = static_cast<double>(parse_bytes(cli.bytes, "--bytes"));
  const bool split = cli.compute_us_per_image >= 0;
  const double model_bytes =
      cli.model_bytes.empty() ? bytes : static_cast<double>(parse_bytes(cli.model_bytes, "--model-bytes"));
  std::vector<int> nodes;
  if (split) {
    if (cli.batch < 1) throw BadInput("--batch must be >= 1, got " + std::to_string(cli.batch));
    nodes = parse_int_list(cli.nodes, "--nodes");
    for (int k : nodes)
      if (cli.batch % k != 0)
        throw BadInput("--nodes: " + std::to_string(k) + " does not divide --batch " + std::to_string(cli.batch));
  }
  if (!(cli.tolerance > 0)) throw BadInput("--tolerance must be > 0");
  std::vector<Json> docs;
  for (const auto& f : cli.fit) docs.push_back(read_option_file(f, "--fit"));
  Json measured;
  if (!cli.check.empty()) measured = read_option_file(cli.check, "--check");
  if (!cli.json.empty()) check_writable(cli.json, false);

  const double fit_max = cli.fit_max.empty() ? 0.0 : static_cast<double>(parse_bytes(cli.fit_max, "--fit-max-bytes"));
  const FittedModel m =
      fit_cost_model(docs, static_cast<double>(parse_bytes(cli.eager, "--eager-bytes")), fit_max);
  Json out = {{"kind", "dtbench.model"}, {"fit_files", cli.fit}, {"fit", m.to_json()}};
  char line[256];

  std::printf("# alpha-beta-gamma fit from %zu file(s), ranks", cli.fit.size());
  for (int r : m.ranks) std::printf(" %d", r);
  std::printf("; gamma (local reduction) = %.4f ns/B\n", m.gamma * 1e9);
  std::printf("# messages above %.0f bytes pay alpha_rndv (rendezvous)\n", m.eager_bytes);
  std::printf("# %18s %12s %12s %14s %22s %10s\n", "reducer", "alpha (us)", "a_rndv (us)", "beta (ns/B)",
              "fitted sizes (B)", "rms err");
  for (const auto& [name, c] : m.params)
    std::printf("  %18s %12.3f %12.3f %14.5f %10.0f..%-11.0f %9.1f%%\n", name.c_str(), c.alpha * 1e6,
                c.alpha_rndv * 1e6, c.beta * 1e9, m.min_bytes.at(name), m.max_bytes.at(name),
                100 * m.rms_rel_error.at(name));

  // Predictions at the requested rank counts.
  std::printf("\n# predicted allreduce of %.0f bytes\n", bytes);
  std::printf("# %18s %8s %14s %11s %11s\n", "reducer", "ranks", "time (us)", "algbw", "busbw");
  Json preds = Json::array();
  for (const auto& [name, c] : m.params)
    for (int p : ranks) {
      const double t = predict_seconds(cost_terms(name, p, bytes, m.options, m.eager_bytes), c);
      const double algbw = t > 0 ? bytes / t / 1e9 : 0;
      std::printf("  %18s %8d %14.1f %11.3f %11.3f\n", name.c_str(), p, t * 1e6, algbw,
                  algbw * allreduce_bus_factor(p));
      preds.push_back({{"reducer", name}, {"ranks", p}, {"bytes", bytes}, {"time_us", t * 1e6}});
    }
  out["predictions"] = preds;

  if (split) {
    // The seeds' quiz: a total batch split over k nodes. Compute per step = (batch / k) images x the
    // per-image time; communication = one allreduce of the model's gradients with the fastest reducer.
    // Serial: compute + communication (no overlap); overlapped: max of the two (perfect overlap).
    std::printf("\n# batch %d split over nodes: %.1f us/image compute, %.0f gradient bytes\n", cli.batch,
                cli.compute_us_per_image, model_bytes);
    std::printf("# %8s %10s %14s %14s %18s %14s %14s %12s\n", "nodes", "per node", "compute (us)", "comm (us)",
                "best reducer", "serial (us)", "overlap (us)", "images/s");
    Json rows = Json::array();
    for (int k : nodes) {
      const double compute = cli.batch / k * cli.compute_us_per_image * 1e-6;
      std::string best = "-";
      double comm = 0;
      if (k > 1) {
        comm = std::numeric_limits<double>::max();
        for (const auto& [name, c] : m.params) {
          double t = predict_seconds(cost_terms(name, k, model_bytes, m.options, m.eager_bytes), c);
          if (t < comm) comm = t, best = name;
        }
      }
      const double serial = compute + comm, overlap = std::max(compute, comm);
      std::snprintf(line, sizeof line, "  %8d %10d %14.1f %14.1f %18s %14.1f %14.1f %12.1f\n", k, cli.batch / k,
                    compute * 1e6, comm * 1e6, best.c_str(), serial * 1e6, overlap * 1e6, cli.batch / serial);
      std::fputs(line, stdout);
      rows.push_back({{"nodes", k},
                      {"per_node_batch", cli.batch / k},
                      {"compute_us", compute * 1e6},
                      {"comm_us", comm * 1e6},
                      {"reducer", best},
                      {"step_serial_us", serial * 1e6},
                      {"step_overlap_us", overlap * 1e6},
                      {"images_per_s_serial", cli.batch / serial}});
    }
    out["batch_split"] = {{"batch", cli.batch},
                          {"compute_us_per_image", cli.compute_us_per_image},
                          {"model_bytes", model_bytes},
                          {"rows", rows}};
  }

  size_t outside = 0;
  if (!measured.is_null()) {
    // Predictions against a measured sweep, for sizes inside each reducer's fitted range.
    const Json& rows = field(measured, "rows", "--check file");
    const int p = field(measured, "ranks", "--check file").get<int>();
    std::printf("\n# check against %s (%d ranks), tolerance %.0f%%\n", cli.check.c_str(), p, 100 * cli.tolerance);
    std::printf("# %12s %18s %14s %14s %9s\n", "size (B)", "reducer", "measured (us)", "model (us)", "error");
    Json checks = Json::array();
    double worst = 0;
    for (const Json& r : rows) {
      const std::string name = r.at("reducer").get<std::string>();
      const double b = r.at("bytes").get<double>(), t = row_seconds(r);
      if (!m.params.count(name) || b < m.min_bytes.at(name) || b > m.max_bytes.at(name) || t <= 0) continue;
      const double pred = predict_seconds(cost_terms(name, p, b, m.options, m.eager_bytes), m.params.at(name));
      const double err = (pred - t) / t;
      const bool ok = std::abs(err) <= cli.tolerance;
      outside += !ok;
      worst = std::max(worst, std::abs(err));
      std::printf("  %12.0f %18s %14.2f %14.2f %8.1f%%%s\n", b, name.c_str(), t * 1e6, pred * 1e6, 100 * err,
                  ok ? "" : "  OUTSIDE");
      checks.push_back({{"reducer", name}, {"bytes", b}, {"measured_us", t * 1e6}, {"model_us", pred * 1e6},
                        {"rel_error", err}});
    }
    if (checks.empty()) throw BadInput("--check: no row of '" + cli.check + "' lies inside the fitted ranges");
    std::printf("# %zu of %zu predictions outside %.0f%% (worst %.1f%%)\n", outside, checks.size(),
                100 * cli.tolerance, 100 * worst);
    out["check"] = {{"file", cli.check}, {"tolerance", cli.tolerance}, {"rows", checks}, {"outside", outside}};
  }
  if (!cli.json.empty()) {
    out["provenance"] = provenance();
    write_json_atomic(cli.json, out, false);
  }
  if (outside > 0)
    throw RunFailed("model: " + std::to_string(outside) + " predictions differ from the measured times by more than " +
                    std::to_string(static_cast<int>(100 * cli.tolerance)) + "%");
}

}  // namespace

void add_model_command(CLI::App& app) {
  auto cli = std::make_shared<CliOptions>();
  auto* cmd = app.add_subcommand("model", "Fit the alpha-beta-gamma cost model to an allreduce sweep and predict");
  cmd->add_option("--fit", cli->fit, "`dtbench allreduce --json` file(s) to fit (repeatable)")->required();
  cmd->add_option("--ranks", cli->ranks, "Rank counts to predict, comma-separated")->capture_default_str();
  cmd->add_option("--bytes", cli->bytes, "Allreduce size to predict (K/M/G suffixes)")->capture_default_str();
  cmd->add_option("--compute-us-per-image", cli->compute_us_per_image,
                  "Batch split: compute time per image (us); enables the batch-split table");
  cmd->add_option("--batch", cli->batch, "Batch split: total batch size")->capture_default_str();
  cmd->add_option("--model-bytes", cli->model_bytes, "Batch split: gradient bytes per step (default --bytes)");
  cmd->add_option("--nodes", cli->nodes, "Batch split: node counts, comma-separated")->capture_default_str();
  cmd->add_option("--check", cli->check, "Compare predictions with this measured sweep (sizes inside the fit range)");
  cmd->add_option("--tolerance", cli->tolerance, "--check: largest relative error accepted")->capture_default_str();
  cmd->add_option("--fit-max-bytes", cli->fit_max, "Fit only rows up to this size (default: all)");
  cmd->add_option("--eager-bytes", cli->eager, "Messages up to this size pay alpha, larger ones alpha_rndv")
      ->capture_default_str();
  cmd->add_option("--json", cli->json, "Write the fit, predictions and answers to this JSON file");
  cmd->callback([cli] { run_command(*cli); });
}

}  // namespace dtbench
