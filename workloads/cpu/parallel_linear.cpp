#include "workloads/cpu/parallel_linear.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace dtbench::cpu {

using dnnl::memory;

ParallelLinear::ParallelLinear(Plan& plan, std::string name, int out_features, models::RowRange rows,
                               size_t weight_offset, size_t bias_offset, const memory& x)
    : name_(std::move(name)), out_(out_features), rows_(rows), x_dims_(x.get_desc().dims()) {
  const models::ModelParallelGroup& group = plan.context().model_parallel;
  const models::ModelParallelGroup* g = &group;  // the context outlives its plans
  if (!group.allgather) throw std::logic_error(name_ + ": a model-parallel layer needs the group's allgather");
  const int64_t n = x_dims_[0];
  local_ = &plan.keep<Linear>(plan, name_, static_cast<int>(rows.size()), weight_offset, bias_offset, x, true);
  for (int j = 0; j < group.size; ++j)
    y_counts_.push_back(static_cast<size_t>(n * models::shard_rows(out_features, group.size, j).size()));
  memory gathered = plan.alloc(plain_md({n * out_features}));
  y_ = plan.alloc(plain_md({n, out_features}));
  plan.forward_host(name_ + ".allgather", [this, gathered, n, g]() {
    const float* mine = static_cast<const float*>(local_->y().get_data_handle());
    float* all = static_cast<float*>(gathered.get_data_handle());
    g->allgather(mine, all, y_counts_);
    // Member j's block is N x O_j row-major: its rows go to columns [r_j, r_{j+1}) of y.
    float* y = static_cast<float*>(y_.get_data_handle());
    for (int j = 0; j < g->size; ++j) {
      const models::RowRange r = models::shard_rows(out_, g->size, j);
      for (int64_t i = 0; i < n; ++i) std::memcpy(y + i * out_ + r.begin, all + i * r.size(), size_t(r.size()) * 4);
      all += static_cast<size_t>(n * r.size());
    }
  });
}

memory ParallelLinear::backward(Plan& plan, const memory& dy, bool need_dx) {
  const models::ModelParallelGroup* g = &plan.context().model_parallel;
  const int64_t n = x_dims_[0], own = rows_.size();
  const memory dy_full = plan.backward_as(dy, plain_md({n, out_}), name_ + ".diff_dst");
  const memory dy_own = plan.alloc(plain_md({n, own}));
  plan.backward_host(name_ + ".diff_dst.own_rows", [this, dy_full, dy_own, n, own]() {
    const float* from = static_cast<const float*>(dy_full.get_data_handle());
    float* to = static_cast<float*>(dy_own.get_data_handle());
    for (int64_t i = 0; i < n; ++i) std::memcpy(to + i * own, from + i * out_ + rows_.begin, size_t(own) * 4);
  });
  const memory dx_part = local_->backward(plan, dy_own, need_dx);
  if (!need_dx) return memory();
  const memory part = plan.backward_as(dx_part, plain_md(x_dims_), name_ + ".diff_src");
  const size_t count = num_elements(part.get_desc());
  const memory parts = plan.alloc(plain_md({static_cast<int64_t>(count) * g->size}));
  const memory dx = plan.alloc(plain_md(x_dims_));
  plan.backward_host(name_ + ".diff_src.allgather", [part, parts, dx, count, g]() {
    const float* all = static_cast<const float*>(parts.get_data_handle());
    g->allgather(static_cast<const float*>(part.get_data_handle()), static_cast<float*>(parts.get_data_handle()),
                 std::vector<size_t>(static_cast<size_t>(g->size), count));
    float* sum = static_cast<float*>(dx.get_data_handle());
    std::copy_n(all, count, sum);
    for (int j = 1; j < g->size; ++j)
      for (size_t k = 0; k < count; ++k) sum[k] += all[static_cast<size_t>(j) * count + k];
  });
  return dx;
}

}  // namespace dtbench::cpu
