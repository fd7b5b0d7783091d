#include "reducers/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <tuple>

#include "core/error.hpp"
#include "reducers/hierarchical.hpp"
#include "reducers/registry.hpp"
#include "reducers/sweep_document.hpp"

namespace dtbench {

CostTerms cost_terms(const std::string& reducer, int ranks, double bytes, const ReducerOptions& options,
                     double eager_bytes) {
  if (ranks <= 1 || bytes <= 0) return {};
  const ReducerInfo* r = find_reducer(reducer);
  if (r == nullptr || r->cost == nullptr) throw BadInput("cost model: no formula for reducer '" + reducer + "'");
  return r->cost(ranks, bytes, options, eager_bytes);
}

double allreduce_seconds(const std::string& reducer, int ranks, double bytes, const ReducerOptions& options,
                         double eager_bytes, const CostParams& link, const std::optional<CostParams>& intra) {
  if (!intra) return link_seconds(cost_terms(reducer, ranks, bytes, options, eager_bytes), link, bytes);
  if (reducer != "hierarchical")
    throw BadInput("cost model: a link within the nodes applies to the hierarchical reducer only, not '" + reducer + "'");
  if (ranks <= 1 || bytes <= 0) return 0;
  const Hierarchical::CostParts parts = Hierarchical::cost_parts(ranks, bytes, options, eager_bytes);
  return link_seconds(parts.within, *intra, bytes) + link_seconds(parts.among, link, bytes);
}

// ---- fitting --------------------------------------------------------------------------------------------

namespace {

// Whether two sweeps segment and shard alike (the cost terms depend on it).
// (The hierarchical leader matters to files with hierarchical rows only: sweep_rows compares it among those.)
bool same_options(const ReducerOptions& a, const ReducerOptions& b) {
  return a.segment_bytes == b.segment_bytes && a.servers == b.servers &&
         a.small_segment_bytes == b.small_segment_bytes &&
         a.small_transfer_bytes == b.small_transfer_bytes;
}

// The ranks per node of a sweep's hierarchical rows (sweep_rows in cost_model.hpp), -1 for a placement the formula
// cannot take; only checked documents come here. The launcher's nodes count when they are what --ranks-per-node g would make (consecutive ranks, g per node, the
// last node possibly smaller); one node of every rank is 0, so that both spellings of it are one layout.
int sweep_ranks_per_node(const Json& doc) {
  const int ranks = doc["ranks"].get<int>();
  const int given = doc["options"].value("ranks_per_node", 0);
  if (given > 0) return given >= ranks ? 0 : given;
  if (!doc.contains("nodes")) return 0;
  const Json& nodes = doc["nodes"];
  int g = 0;
  while (g < ranks && nodes[size_t(g)].get<int>() == 0) ++g;
  if (g == ranks) return 0;
  for (int r = 0; r < ranks; ++r)
    if (nodes[size_t(r)].get<int>() != r / g) return -1;
  return g;
}

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
// unconstrained fit on every subset of the columns, keeping the best feasible one (exact: the optimum is the
// unconstrained fit on its own positive set; 2^k subsets, fine for the model's 5).
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

}  // namespace

Regime regime(const CostTerms& t, int ranks, int cores, double bytes, double cache_bytes, double stretch) {
  Regime r;
  r.memory = cache_bytes > 0 && bytes > cache_bytes;
  if (cores > 0 && ranks > cores) {
    r.queued = static_cast<double>(ranks) / cores - 1;
    r.share = 1 + stretch * (std::max(1.0, std::min<double>(ranks, t.concurrency) / cores) - 1);
  }
  return r;
}

double FittedModel::predict(const std::string& reducer, int ranks, int cores, double bytes) const {
  return predict(SweepRow{reducer, ranks, cores, options.ranks_per_node, bytes, 0});
}

CostTerms FittedModel::terms(const SweepRow& row) const {
  ReducerOptions o = options;
  o.ranks_per_node = row.ranks_per_node;
  return cost_terms(row.reducer, row.ranks, row.bytes, o, eager_bytes);
}

double FittedModel::predict(const SweepRow& row) const {
  const CostParams& c = params.at(row.reducer);
  const CostTerms t = terms(row);
  return predict_seconds(t, c, regime(t, row.ranks, row.cores, row.bytes, c.cache_bytes, c.stretch));
}

double FittedModel::predict_hierarchical_from_parts(int ranks, int cores, double bytes, int ranks_per_node) const {
  for (const std::string& part : {std::string("parameter_server"), options.leader})
    if (!params.count(part))
      throw BadInput("cost model: the hierarchical reducer's parts need a fit of " + part + " (sweep it beside hierarchical)");
  ReducerOptions o = options;
  o.ranks_per_node = ranks_per_node;
  const Hierarchical::CostParts parts = Hierarchical::cost_parts(ranks, bytes, o, eager_bytes);
  const auto priced = [&](const CostTerms& t, const CostParams& c) {
    return predict_seconds(t, c, regime(t, ranks, cores, bytes, c.cache_bytes, c.stretch));
  };
  return priced(parts.within, params.at("parameter_server")) + priced(parts.among, params.at(options.leader));
}

namespace {

// Per reducer, the rms of (predicted - measured) / measured over the rows `predicted` prices (it returns
// nullopt for the rows it leaves out).
template <class Predicted>
std::map<std::string, double> rms_by_reducer(const std::vector<SweepRow>& rows, const Predicted& predicted) {
  std::map<std::string, double> sq, count;
  for (const SweepRow& r : rows) {
    const std::optional<double> pred = predicted(r);
    if (!pred) continue;
    sq[r.reducer] += std::pow((*pred - r.seconds) / r.seconds, 2);
    count[r.reducer] += 1;
  }
  for (auto& [name, v] : sq) v = std::sqrt(v / count.at(name));
  return sq;
}

}  // namespace

double rms_rel_error_from_parts(const FittedModel& m, const std::vector<SweepRow>& rows) {
  const std::map<std::string, double> e = rms_by_reducer(rows, [&](const SweepRow& r) -> std::optional<double> {
    if (r.reducer != "hierarchical") return std::nullopt;
    return m.predict_hierarchical_from_parts(r.ranks, r.cores, r.bytes, r.ranks_per_node);
  });
  return e.empty() ? -1 : e.begin()->second;
}

double row_seconds(const Json& r) {
  return (r.contains("time_median_us") ? r.at("time_median_us") : r.at("time_us")).get<double>() * 1e-6;
}

Json intra_node_json(int ranks_per_node, const CostParams& link) {
  return {{"ranks_per_node", ranks_per_node}, {"link", link_json(link)}};
}

Json link_json(const CostParams& link) {
  Json j = {{"alpha_s", link.alpha}, {"beta_s_per_byte", link.beta}, {"gamma_s_per_byte", link.gamma}};
  if (link.cache_bytes > 0 && link.beta_mem > 0)  // a fitted profile's memory regime (link_seconds prices it)
    j["beta_mem_s_per_byte"] = link.beta_mem, j["cache_bytes"] = link.cache_bytes;
  return j;
}

Json FittedModel::to_json() const {
  Json p = Json::object();
  for (const auto& [name, c] : params)
    p[name] = {{"alpha_us", c.alpha * 1e6},
               {"alpha_rndv_us", c.alpha_rndv * 1e6},
               {"alpha_sched_us", c.alpha_sched * 1e6},
               {"beta_ns_per_byte", c.beta * 1e9},
               {"beta_mem_ns_per_byte", c.beta_mem * 1e9},
               {"gamma_ns_per_byte", c.gamma * 1e9},
               {"cache_bytes", c.cache_bytes},
               {"stretch", c.stretch},
               {"fitted_bytes", {min_bytes.at(name), max_bytes.at(name)}},
               {"rms_rel_error", rms_rel_error.at(name)}};
  return {{"gamma_ns_per_byte", gamma * 1e9},
          {"eager_bytes", eager_bytes},
          {"segment_bytes", options.segment_bytes},
          {"small_segment_bytes", options.small_segment_bytes},
          {"small_transfer_bytes", options.small_transfer_bytes},
          {"servers", options.servers},
          {"leader", options.leader},
          {"ranks_per_node", options.ranks_per_node},
          {"ranks", ranks},
          {"reducers", p}};
}

std::vector<SweepRow> sweep_rows(const std::vector<Json>& sweeps, const std::string& what, ReducerOptions& options,
                                 double max_bytes, std::string* left_out) {
  size_t one_rank = 0, wrong = 0, untimed = 0, too_large = 0, no_formula = 0, placement = 0;
  // (reducer, ranks, cores, ranks per node, bytes) -> the time of each file that measured it
  std::map<std::tuple<std::string, int, int, int, double>, std::vector<double>> times;
  int first_hierarchical = -1;  // the first file with hierarchical rows: options' leader and ranks_per_node are its
  for (size_t f = 0; f < sweeps.size(); ++f) {
    const Json& doc = sweeps[f];
    const std::string where = what + " " + std::to_string(f + 1);
    try {
      check_sweep_document(doc);  // every field below is there, of its type and range
    } catch (const BadInput& e) {
      throw BadInput(where + ": " + e.what());
    }
    const Json& opt = doc["options"];
    const ReducerOptions o = sweep_options(doc);
    if (f == 0) {
      options = o;
    } else if (!same_options(o, options)) {
      throw BadInput(where + ": /options (segment sizes or servers) differ from the first file's; use sweeps "
                     "taken with the same options");
    }
    if (has_hierarchical_rows(doc)) {
      const std::string leader = opt.value("leader", ReducerOptions{}.leader);
      if (first_hierarchical < 0) {
        first_hierarchical = static_cast<int>(f);
        options.leader = leader;
      } else if (leader != options.leader) {
        throw BadInput(where + ": /options/leader \"" + leader + "\" differs from " + what + " " +
                       std::to_string(first_hierarchical + 1) + "'s \"" + options.leader +
                       "\"; the hierarchical rows of one fit share their leader");
      }
    }
    const int ranks_per_node = sweep_ranks_per_node(doc);
    const int ranks = doc["ranks"].get<int>();
    int cores = 0;
    if (doc.contains("provenance") && doc["provenance"].contains("cpu"))
      cores = doc["provenance"]["cpu"].value("logical_cores", 0);
    for (const Json& r : doc["rows"]) {
      if (!r.at("wrong").is_null() && r.at("wrong").get<uint64_t>() != 0) {  // a wrong result's time means nothing
        ++wrong;
        continue;
      }
      const double bytes = r.at("bytes").get<double>(), t = row_seconds(r);
      if (ranks < 2) {
        ++one_rank;
        continue;
      }
      if (bytes <= 0 || t <= 0) {
        ++untimed;
        continue;
      }
      if (max_bytes > 0 && bytes > max_bytes) {
        ++too_large;
        continue;
      }
      // A reducer without a cost formula (nccl) is not fitted: its rows are left out.
      const std::string name = r.at("reducer").get<std::string>();
      const ReducerInfo* info = find_reducer(name);
      if (info == nullptr || info->cost == nullptr) {
        ++no_formula;
        continue;
      }
      int g = 0;
      if (name == "hierarchical") {
        if (ranks_per_node < 0) {
          ++placement;
          continue;
        }
        g = ranks_per_node;
        if (first_hierarchical == static_cast<int>(f)) options.ranks_per_node = g;
      }
      times[{name, ranks, cores, g, bytes}].push_back(t);
    }
  }
  std::vector<SweepRow> rows;
  for (auto& [key, ts] : times) {
    std::sort(ts.begin(), ts.end());
    const size_t h = ts.size() / 2;
    const double median = ts.size() % 2 ? ts[h] : 0.5 * (ts[h - 1] + ts[h]);
    rows.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), std::get<4>(key), median});
  }
  if (left_out != nullptr) {
    std::string s;
    for (const auto& [n, why] : std::initializer_list<std::pair<size_t, const char*>>{
             {one_rank, "of 1 rank"}, {wrong, "with wrong results"}, {untimed, "of 0 bytes or 0 time"},
             {too_large, "above --fit-max-bytes"}, {no_formula, "of a reducer without a cost formula"},
             {placement, "of hierarchical with a placement the formula does not know"}})
      if (n > 0) s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + why;
    *left_out = s.empty() ? "no rows" : "rows left out: " + s;
  }
  return rows;
}

std::map<std::string, double> rms_rel_error(const FittedModel& m, const std::vector<SweepRow>& rows) {
  return rms_by_reducer(rows, [&](const SweepRow& r) -> std::optional<double> {
    if (!m.params.count(r.reducer)) return std::nullopt;
    return m.predict(r);
  });
}

void check_options_as_fitted(const FittedModel& m, const ReducerOptions& o, const std::vector<SweepRow>& rows,
                             const std::string& what) {
  if (!same_options(o, m.options))
    throw BadInput(what + ": /options (segment sizes or servers) differ from the fitted sweeps'");
  const bool hierarchical = std::any_of(rows.begin(), rows.end(), [](const SweepRow& r) { return r.reducer == "hierarchical"; });
  if (hierarchical && m.params.count("hierarchical") && o.leader != m.options.leader)
    throw BadInput(what + ": /options/leader \"" + o.leader + "\" differs from the fitted sweeps' \"" +
                   m.options.leader + "\"");
}

std::map<std::string, double> holdout_rms_rel_error(const FittedModel& m, const std::vector<Json>& sweeps) {
  ReducerOptions o;
  std::string left_out;
  const std::vector<SweepRow> rows = sweep_rows(sweeps, "held-out file", o, 0, &left_out);
  check_options_as_fitted(m, o, rows, "held-out files");
  std::map<std::string, double> err = rms_rel_error(m, rows);
  if (err.empty()) throw BadInput("held-out files: no row of a fitted reducer (" + left_out + ")");
  return err;
}

namespace {

// One reducer's parameters with the memory regime above `cache_bytes` and the time-sharing `stretch`, and the
// weighted loss of the fit.
CostParams fit_reducer(const FittedModel& m, const std::vector<const SweepRow*>& rows, double cache_bytes,
                       double stretch, double& loss) {
  // Columns: alpha, alpha_rndv, beta, beta_mem, alpha_sched; y: the time less the reduction term.
  std::vector<std::vector<double>> X(5);
  std::vector<double> y, w;
  CostParams unit;  // gamma only: the part of the prediction that is not fitted here
  unit.gamma = m.gamma;
  std::vector<double> queued;  // each row's ranks queued per core
  for (const SweepRow* r : rows) {
    const CostTerms t = m.terms(*r);
    const Regime g = regime(t, r->ranks, r->cores, r->bytes, cache_bytes, stretch);
    X[0].push_back(t.alpha);
    X[1].push_back(t.alpha_rndv);
    X[2].push_back(g.share * t.beta);
    X[3].push_back(g.memory ? g.share * t.beta : 0);
    X[4].push_back(g.queued * (t.alpha + t.alpha_rndv));
    queued.push_back(g.queued);
    y.push_back(r->seconds - predict_seconds(t, unit, g));
    w.push_back(1.0 / (r->seconds * r->seconds));
  }
  // alpha_sched is told from alpha only by rows queued differently: where every row has the same number of ranks
  // queued per core (one oversubscribed rank count), its column is a multiple of alpha's and the split between
  // them was arbitrary (a fit of K = 3 on 2 cores gave ring alpha 0, so 0 us at one rank per core; a hunt). Then it
  // stays 0 and alpha takes the whole latency, as for any term whose regime the fit data do not vary.
  if (std::adjacent_find(queued.begin(), queued.end(), std::not_equal_to<>()) == queued.end())
    std::fill(X[4].begin(), X[4].end(), 0.0);
  const std::vector<double> coef = fit_nonneg(X, y, w);
  loss = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    double pred = 0;
    for (size_t j = 0; j < X.size(); ++j) pred += X[j][i] * coef[j];
    loss += w[i] * (pred - y[i]) * (pred - y[i]);
  }
  CostParams c;
  c.gamma = m.gamma;
  c.alpha = coef[0];
  c.alpha_rndv = coef[1];
  c.beta = coef[2];
  c.beta_mem = coef[3];
  c.alpha_sched = coef[4];
  c.cache_bytes = c.beta_mem > 0 ? cache_bytes : 0;
  c.stretch = stretch;
  const auto any = [](const std::vector<double>& v) {
    return std::any_of(v.begin(), v.end(), [](double x) { return x > 0; });
  };
  if (!any(X[0])) c.alpha = c.alpha_rndv;
  if (!any(X[1])) c.alpha_rndv = c.alpha;
  return c;
}

}  // namespace

FittedModel fit_cost_model(const std::vector<Json>& sweeps, double eager_bytes, double max_bytes) {
  if (sweeps.empty()) throw BadInput("cost model: no sweep to fit (give --fit FILE)");
  FittedModel m;
  m.eager_bytes = eager_bytes;
  std::string left_out;
  const std::vector<SweepRow> rows = sweep_rows(sweeps, "fit file", m.options, max_bytes, &left_out);
  std::vector<double> red_x, red_y;
  for (size_t f = 0; f < sweeps.size(); ++f) {
    const int ranks = sweeps[f].at("ranks").get<int>();
    if (std::find(m.ranks.begin(), m.ranks.end(), ranks) == m.ranks.end()) m.ranks.push_back(ranks);
    for (const Json& r : sweeps[f]["reduction"]) {  // checked by sweep_rows
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
  std::map<std::string, std::vector<const SweepRow*>> by_reducer;
  for (const auto& r : rows) by_reducer[r.reducer].push_back(&r);
  if (by_reducer.empty()) throw BadInput("cost model: the fit files hold no row to fit (" + left_out + ")");
  for (const auto& [name, rs] : by_reducer) {
    // cache_bytes: none, or the geometric midpoint between two adjacent fitted sizes; the least loss.
    std::vector<double> sizes;
    for (const SweepRow* r : rs) sizes.push_back(r->bytes);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    std::vector<double> caches = {0};
    for (size_t i = 0; i + 1 < sizes.size(); ++i) caches.push_back(std::sqrt(sizes[i] * sizes[i + 1]));
    // stretch: from 1 down, so that without oversubscribed rows (every stretch fits alike) it stays 1.
    const bool oversubscribed =
        std::any_of(rs.begin(), rs.end(), [](const SweepRow* r) { return r->cores > 0 && r->ranks > r->cores; });
    double best = std::numeric_limits<double>::max();
    for (int tenths = 10; tenths >= (oversubscribed ? 0 : 10); --tenths) {
      for (double cache : caches) {
        double loss = 0;
        const CostParams c = fit_reducer(m, rs, cache, tenths / 10.0, loss);
        if (loss < best) best = loss, m.params[name] = c;
      }
    }
    m.min_bytes[name] = sizes.front();
    m.max_bytes[name] = sizes.back();
  }
  m.rms_rel_error = rms_rel_error(m, rows);
  return m;
}

}  // namespace dtbench
