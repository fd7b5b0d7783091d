#include "analysis/summary.hpp"

#include <algorithm>

namespace dtbench::analysis {

std::optional<Summary> summarize(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  Summary s;
  s.n = n;
  s.min = values.front();
  s.max = values.back();
  // Halved before the sum: two values near DBL_MAX would sum to inf, outside [min, max].
  s.median = n % 2 ? values[n / 2] : 0.5 * values[n / 2 - 1] + 0.5 * values[n / 2];
  return s;
}

}  // namespace dtbench::analysis
