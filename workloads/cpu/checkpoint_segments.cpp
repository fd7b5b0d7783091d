#include "workloads/cpu/network.hpp"
#include "workloads/models/checkpointing.hpp"

namespace dtbench::cpu {

CheckpointSegments::CheckpointSegments(Plan& plan, const std::vector<double>& unit_costs, int segments) {
  if (!plan.training() || segments == 0) return;
  segment_ = models::segment_of_units(unit_costs, segments);
  plan.begin_segment();
}

bool CheckpointSegments::ends_segment(int unit) const {
  const size_t u = static_cast<size_t>(unit);
  return u + 1 == segment_.size() || segment_[u] != segment_[u + 1];
}

dnnl::memory CheckpointSegments::after_forward(Plan& plan, int unit, const dnnl::memory& y) const {
  if (segment_.empty() || !ends_segment(unit)) return y;
  dnnl::memory checkpoint = plan.end_segment(y);
  if (static_cast<size_t>(unit) + 1 < segment_.size()) plan.begin_segment();
  return checkpoint;
}

dnnl::memory CheckpointSegments::before_backward(Plan& plan, int unit, const dnnl::memory& dy) const {
  if (segment_.empty() || !ends_segment(unit)) return dy;
  return plan.backward_segment(dy);
}

}  // namespace dtbench::cpu
