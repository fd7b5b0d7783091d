// The linear partition problem: n items with costs, in order, cut into k contiguous non-empty parts so that the
// costliest part is as cheap as it can be; solved exactly by dynamic programming (O(k n^2)). Among the cuts within
// that bound, the most even one (the smallest sum of squared part costs; with equal costs the sizes differ by at
// most one). Gradient checkpointing's segments (workloads/models/checkpointing.hpp), pipeline stages
// (workloads/train/pipeline.hpp) and the cost model's pipeline (reducers/parallelism_choice.hpp) are such cuts.
#pragma once

#include <vector>

namespace dtbench {

// The part of each item; 1 <= parts <= costs.size() (std::logic_error otherwise).
std::vector<int> linear_partition(const std::vector<double>& costs, int parts);

}  // namespace dtbench
