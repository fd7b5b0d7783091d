#include "workloads/train/model_parallel.hpp"

#include <climits>
#include <string>

#include "core/error.hpp"
#include "core/timer.hpp"
#include "workloads/models/model_description.hpp"

namespace dtbench {

ModelParallel::ModelParallel(const World& world, int group_size)
    : m_(group_size), rank_(world.rank()), size_(world.size()) {
  if (m_ < 1 || size_ % m_ != 0)
    throw RunFailed("model parallelism: a group of " + std::to_string(m_) + " does not divide " + std::to_string(size_));
  MPI_Comm_split(world.comm(), replica(), rank_, &group_);
  MPI_Comm_split(world.comm(), shard(), rank_, &replica_);
}

ModelParallel::~ModelParallel() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (group_ != MPI_COMM_NULL) MPI_Comm_free(&group_);
  if (replica_ != MPI_COMM_NULL) MPI_Comm_free(&replica_);
}

models::ModelParallelGroup ModelParallel::group() {
  models::ModelParallelGroup g;
  g.size = m_;
  g.rank = shard();
  g.allgather = [this](const float* mine, float* all, const std::vector<size_t>& counts) {
    const double t0 = now_seconds();
    std::vector<int> n(counts.size()), at(counts.size());
    size_t total = 0;
    for (size_t j = 0; j < counts.size(); ++j) {
      if (counts[j] > INT_MAX || total > INT_MAX)  // MPI counts and displacements are ints
        throw RunFailed("model parallelism: an activation of " + std::to_string(counts[j]) + " floats is over MPI's int count");
      n[j] = static_cast<int>(counts[j]), at[j] = static_cast<int>(total), total += counts[j];
    }
    MPI_Allgatherv(mine, n[static_cast<size_t>(shard())], MPI_FLOAT, all, n.data(), at.data(), MPI_FLOAT, group_);
    Exchanges& e = evaluating_ ? evaluation_ : training_;
    e.seconds += now_seconds() - t0;
    e.floats_received += static_cast<double>(total - counts[static_cast<size_t>(shard())]);
    ++e.allgathers;
  };
  return g;
}

void ModelParallel::broadcast_from_first_replica(std::span<float> data) const {
  if (!data.empty()) MPI_Bcast(data.data(), static_cast<int>(data.size()), MPI_FLOAT, 0, replica_);
}

std::vector<float> ModelParallel::gather_whole(std::span<const float> mine, const models::ModelSpec& spec) const {
  if (replica() != 0) return {};
  // Group 0's shards, each as its own table lays it out, on rank 0 (shard order = group rank order).
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(m_)), at(static_cast<size_t>(m_));
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, group_);
  int64_t total = 0;
  for (int j = 0; j < m_; ++j) at[static_cast<size_t>(j)] = static_cast<int>(total), total += counts[static_cast<size_t>(j)];
  if (total > INT_MAX) throw RunFailed("model parallelism: the whole model is over MPI's int count of floats");
  std::vector<float> shards(rank_ == 0 ? static_cast<size_t>(total) : 0);
  MPI_Gatherv(mine.data(), count, MPI_FLOAT, shards.data(), counts.data(), at.data(), MPI_FLOAT, 0, group_);
  if (rank_ != 0) return {};

  models::ModelSpec whole_spec = spec;
  whole_spec.shards = 1, whole_spec.shard = 0;
  const models::ModelDescription whole = models::describe(whole_spec);
  std::vector<float> out(whole.param_count());
  for (int j = 0; j < m_; ++j) {
    models::ModelSpec s = spec;
    s.shard = j;
    const models::ModelDescription part = models::describe(s);
    const float* base = shards.data() + at[static_cast<size_t>(j)];
    for (size_t i = 0; i < part.params.size(); ++i) {
      const models::ParamInfo& p = part.params[i];
      if (p.full_rows == 0 && j > 0) continue;  // held whole by every shard: shard 0's copy
      const size_t row = p.size / static_cast<size_t>(p.shape[0]);
      std::copy_n(base + p.offset, p.size, out.data() + whole.params[i].offset + static_cast<size_t>(p.row_begin) * row);
    }
  }
  return out;
}

Json ModelParallel::record(int64_t steps, size_t params_per_rank, size_t params_whole) const {
  const double per_step = steps > 0 ? 1.0 / static_cast<double>(steps) : 0.0;
  return {{"group_size", m_},
          {"replicas", replicas()},
          {"layout", "rank k is shard k mod group_size of replica k / group_size"},
          {"parameters_per_rank", params_per_rank},
          {"parameters_whole_model", params_whole},
          {"activation_allgathers", training_.allgathers},
          {"activation_seconds_per_step", training_.seconds * per_step},
          {"activation_bytes_received_per_step", training_.floats_received * 4.0 * per_step},
          {"evaluation_allgathers", evaluation_.allgathers},
          {"evaluation_bytes_received", evaluation_.floats_received * 4.0},
          {"note", "rank 0's exchanges within its model-parallel group: the training steps' per step, the "
                   "evaluations' in all"}};
}

}  // namespace dtbench
