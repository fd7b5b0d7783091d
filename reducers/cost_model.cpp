#include "reducers/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "reducers/registry.hpp"

namespace dtbench {

CostTerms cost_terms(const std::string& reducer, int ranks, double bytes, const ReducerOptions& options,
                     double eager_bytes) {
  if (ranks <= 1 || bytes <= 0) return {};
  const ReducerInfo* r = find_reducer(reducer);
  if (r == nullptr || r->cost == nullptr) throw BadInput("cost model: no formula for reducer '" + reducer + "'");
  return r->cost(ranks, bytes, options, eager_bytes);
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

}  // namespace

double row_seconds(const Json& r) {
  return (r.contains("time_median_us") ? r.at("time_median_us") : r.at("time_us")).get<double>() * 1e-6;
}

const Json& sweep_field(const Json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw BadInput(where + ": missing \"" + key + "\"");
  return j.at(key);
}

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
    const Json& opt = sweep_field(doc, "options", where);
    ReducerOptions o;
    o.segment_bytes = sweep_field(opt, "segment_bytes", where + " /options").get<size_t>();
    o.small_segment_bytes = opt.value("small_segment_bytes", o.small_segment_bytes);
    o.small_transfer_bytes = opt.value("small_transfer_bytes", o.small_transfer_bytes);
    o.servers = sweep_field(opt, "servers", where + " /options").get<int>();
    if (first) {
      m.options = o;
      first = false;
    } else if (o.segment_bytes != m.options.segment_bytes || o.servers != m.options.servers ||
               o.small_segment_bytes != m.options.small_segment_bytes ||
               o.small_transfer_bytes != m.options.small_transfer_bytes) {
      throw BadInput(where + ": /options (segment sizes or servers) differ from the first file's; fit sweeps "
                     "taken with the same options");
    }
    const int ranks = sweep_field(doc, "ranks", where).get<int>();
    if (std::find(m.ranks.begin(), m.ranks.end(), ranks) == m.ranks.end()) m.ranks.push_back(ranks);
    for (const Json& r : sweep_field(doc, "rows", where)) {
      if (r.at("wrong").get<uint64_t>() != 0) continue;  // a wrong result's time means nothing
      if (max_bytes > 0 && r.at("bytes").get<double>() > max_bytes) continue;
      rows.push_back({r.at("reducer").get<std::string>(), ranks, r.at("bytes").get<double>(),
                      row_seconds(r)});
    }
    for (const Json& r : sweep_field(doc, "reduction", where)) {
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

}  // namespace dtbench
