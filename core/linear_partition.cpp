#include "core/linear_partition.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace dtbench {

std::vector<int> linear_partition(const std::vector<double>& costs, int segments) {
  const int n = static_cast<int>(costs.size());
  if (segments < 1 || segments > n)
    throw std::logic_error("linear_partition: need 1 <= segments <= units, got " + std::to_string(segments) +
                           " segments of " + std::to_string(n) + " units");
  std::vector<double> prefix(size_t(n) + 1, 0.0);
  for (int u = 0; u < n; ++u) prefix[size_t(u) + 1] = prefix[size_t(u)] + costs[size_t(u)];
  auto cost = [&](int m, int i) { return prefix[size_t(i)] - prefix[size_t(m)]; };  // units [m, i)
  const double inf = std::numeric_limits<double>::infinity();
  using Table = std::vector<std::vector<double>>;
  // First the smallest largest-segment cost: worst[j][i] over units [0, i) cut into j segments.
  Table worst(size_t(segments) + 1, std::vector<double>(size_t(n) + 1, inf));
  worst[0][0] = 0.0;
  for (int j = 1; j <= segments; ++j)
    for (int i = j; i <= n; ++i)
      for (int m = j - 1; m < i; ++m)
        worst[size_t(j)][size_t(i)] = std::min(worst[size_t(j)][size_t(i)], std::max(worst[size_t(j) - 1][size_t(m)], cost(m, i)));
  const double limit = worst[size_t(segments)][size_t(n)];
  // Then, among the cuts within that limit, the one with the smallest sum of squared segment costs: the most
  // even one (with equal costs, sizes differing by at most one). squares[j][i] and where its last segment starts.
  Table squares(size_t(segments) + 1, std::vector<double>(size_t(n) + 1, inf));
  std::vector<std::vector<int>> start(size_t(segments) + 1, std::vector<int>(size_t(n) + 1, 0));
  squares[0][0] = 0.0;
  for (int j = 1; j <= segments; ++j) {
    for (int i = j; i <= n; ++i) {
      for (int m = j - 1; m < i; ++m) {
        const double c = cost(m, i);
        if (c > limit || squares[size_t(j) - 1][size_t(m)] == inf) continue;
        const double v = squares[size_t(j) - 1][size_t(m)] + c * c;
        if (v < squares[size_t(j)][size_t(i)]) squares[size_t(j)][size_t(i)] = v, start[size_t(j)][size_t(i)] = m;
      }
    }
  }
  std::vector<int> out(static_cast<size_t>(n));
  for (int j = segments, i = n; j >= 1; --j) {
    const int m = start[size_t(j)][size_t(i)];
    for (int u = m; u < i; ++u) out[size_t(u)] = j - 1;
    i = m;
  }
  return out;
}

}  // namespace dtbench
