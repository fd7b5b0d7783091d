// Summary statistics over the repeats of a sweep point: median, minimum and maximum. With few
// repeats (typically 3-5) the median is the robust centre: one slow or crashed-then-resumed run does
// not move it, as the MLPerf rule of dropping the fastest and slowest run intends.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace dtbench::analysis {

struct Summary {
  double median = 0, min = 0, max = 0;
  size_t n = 0;
};

// Median (mean of the two middle values for an even count), min and max; nullopt for no values.
std::optional<Summary> summarize(std::vector<double> values);

}  // namespace dtbench::analysis
