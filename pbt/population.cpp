#include "pbt/population.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"

namespace dtbench::pbt {

namespace {

double draw(const Prior& p, Rng& rng) {
  const double u = rng.uniform();
  const double v = p.kind == "log_uniform" ? std::exp(std::log(p.min) + u * (std::log(p.max) - std::log(p.min)))
                                           : p.min + u * (p.max - p.min);
  return v;
}

Json value_of(const Prior& p, double v) {
  v = std::clamp(v, p.min, p.max);
  if (p.integer) return static_cast<int64_t>(std::llround(v));
  return v;
}

}  // namespace

Json sample(const Spec& spec, Rng& rng) {
  Json out = Json::object();
  for (const Prior& p : spec.hyperparameters) out[p.key] = value_of(p, draw(p, rng));
  return out;
}

Json explore(const Spec& spec, const Json& hyperparameters, Rng& rng) {
  Json out = Json::object();
  for (const Prior& p : spec.hyperparameters) {
    // Both draws are made whichever is used, so one key's choice does not shift the next key's stream.
    const bool resample = rng.uniform() < spec.resample_probability;
    const double fresh = draw(p, rng);
    const double factor = spec.perturb[rng.below(spec.perturb.size())];
    out[p.key] = value_of(p, resample ? fresh : hyperparameters.at(p.key).get<double>() * factor);
  }
  return out;
}

std::vector<int> select(const Spec& spec, const std::vector<double>& scores, Rng& rng) {
  const int n = static_cast<int>(scores.size());
  auto finite = [](double v) { return std::isfinite(v); };
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  // Best first; diverged (-inf) after every finite score, failed (NaN) last; ties by member index.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const double sa = scores[size_t(a)], sb = scores[size_t(b)];
    if (std::isnan(sa) || std::isnan(sb)) return !std::isnan(sa) && std::isnan(sb);
    return sa > sb;
  });
  const int alive = static_cast<int>(std::count_if(scores.begin(), scores.end(), finite));
  if (alive == 0)
    throw RunFailed("population-based training: no member has an evaluation at this ready point (every run failed or "
                    "diverged)");
  // The top and bottom cuts never overlap: with failed members, fewer may be alive than twice the cut (3 alive and
  // a cut of 2 made the middle member both, replaced by itself or a top member replaced). With one alive, it is
  // the top and nothing alive is replaced.
  const int bottom = std::min(spec.cut(), alive / 2), top = std::max(1, bottom);
  std::vector<int> source(static_cast<size_t>(n));
  std::iota(source.begin(), source.end(), 0);
  for (int rank = 0; rank < n; ++rank) {
    const int m = order[size_t(rank)];
    const double s = scores[size_t(m)];
    // The bottom cut among the evaluated members (ranks alive - bottom .. alive - 1), and every failed or diverged
    // one; random search replaces only the failed members.
    const bool replace = std::isnan(s) || (spec.mode == "pbt" && (!finite(s) || rank >= alive - bottom));
    if (replace) source[size_t(m)] = order[rng.below(uint64_t(top))];
  }
  return source;
}

Rng stream(const Spec& spec, int64_t interval, int member) {
  return Rng(spec.seed, {static_cast<uint64_t>(interval), static_cast<uint64_t>(member)});
}

}  // namespace dtbench::pbt
