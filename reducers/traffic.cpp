#include "reducers/traffic.hpp"

#include "core/error.hpp"
#include "reducers/registry.hpp"

namespace dtbench {

std::vector<RankBytes> expected_traffic(const std::string& reducer, int ranks, size_t bytes,
                                        const ReducerOptions& options) {
  const ReducerInfo& r = reducer_info(reducer);
  if (r.traffic == nullptr)
    throw BadInput("reducer '" + reducer + "' has no traffic formula: its bytes do not move through the Comm");
  if (ranks < 1) throw BadInput("traffic of '" + reducer + "': ranks must be >= 1, got " + std::to_string(ranks));
  if (bytes % sizeof(float) != 0)
    throw BadInput("traffic of '" + reducer + "': " + std::to_string(bytes) + " bytes is not a whole number of floats");
  return r.traffic(ranks, bytes, options);
}

}  // namespace dtbench
