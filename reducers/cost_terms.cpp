#include "reducers/cost_terms.hpp"

#include <cmath>

#include "reducers/exchange.hpp"

namespace dtbench {

double folded_concurrency(int pof2, double main_bytes, double fold_bytes) {
  const double total = main_bytes + fold_bytes;
  return total > 0 ? (pof2 * main_bytes + 2 * fold_bytes) / total : pof2;
}

double segment_messages(double elems, const ReducerOptions& options) {
  return static_cast<double>(segment_count(static_cast<size_t>(std::ceil(elems)), options));
}

}  // namespace dtbench
