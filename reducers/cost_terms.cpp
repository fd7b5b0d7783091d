#include "reducers/cost_terms.hpp"

#include <cmath>

#include "reducers/exchange.hpp"

namespace dtbench {

double segment_messages(double elems, const ReducerOptions& options) {
  return static_cast<double>(segment_count(static_cast<size_t>(std::ceil(elems)), options));
}

}  // namespace dtbench
