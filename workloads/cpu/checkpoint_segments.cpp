#include "workloads/cpu/network.hpp"
#include <algorithm>

#include "workloads/models/checkpointing.hpp"

namespace dtbench::cpu {

CheckpointSegments::CheckpointSegments(Plan& plan, const std::vector<double>& unit_costs, int segments,
                                       const models::ModelSpec& spec) {
  if (!plan.training() || segments == 0) return;
  // The checkpoint units this network holds: all of them, or a pipeline stage's [first, end) of them.
  const int units = static_cast<int>(unit_costs.size());
  int first = 0, end = units;
  if (spec.stages > 1) first = std::min(spec.first_unit, units), end = std::min(spec.end_unit, units);
  if (first >= end) return;
  const std::vector<double> held(unit_costs.begin() + first, unit_costs.begin() + end);
  const std::vector<int> of_held = models::segment_of_units(held, std::min(segments, end - first));
  segment_.assign(static_cast<size_t>(units), -1);
  std::copy(of_held.begin(), of_held.end(), segment_.begin() + first);
  plan.begin_segment();
}

bool CheckpointSegments::ends_segment(int unit) const {
  const size_t u = static_cast<size_t>(unit);
  return u + 1 == segment_.size() || segment_[u] != segment_[u + 1];
}

dnnl::memory CheckpointSegments::after_forward(Plan& plan, int unit, const dnnl::memory& y) const {
  if (segment_.empty() || !ends_segment(unit)) return y;
  dnnl::memory checkpoint = plan.end_segment(y);
  const size_t next = static_cast<size_t>(unit) + 1;
  if (next < segment_.size() && segment_[next] >= 0) plan.begin_segment();  // a unit this network holds
  return checkpoint;
}

dnnl::memory CheckpointSegments::before_backward(Plan& plan, int unit, const dnnl::memory& dy) const {
  if (segment_.empty() || !ends_segment(unit)) return dy;
  return plan.backward_segment(dy);
}

}  // namespace dtbench::cpu
