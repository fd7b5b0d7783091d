#include "workloads/train/model_parallel.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "core/timer.hpp"
#include "workloads/models/model_description.hpp"

namespace dtbench {

namespace {

// MPI's int counts and displacements of blocks of `counts` floats laid end to end; RunFailed naming `what` when
// they do not fit.
struct MpiBlocks {
  std::vector<int> counts, displacements;
  size_t total = 0;
};

MpiBlocks mpi_blocks(const std::vector<size_t>& counts, const std::string& what) {
  MpiBlocks b;
  for (size_t c : counts) {
    b.counts.push_back(static_cast<int>(c));
    b.displacements.push_back(static_cast<int>(b.total));
    b.total += c;
    if (b.total > INT_MAX)
      throw RunFailed("model parallelism: " + what + " of " + std::to_string(b.total) + "+ floats is over MPI's int count");
  }
  return b;
}

}  // namespace

ModelParallel::ModelParallel(const World& world, int group_size, Form form)
    : m_(group_size), rank_(world.rank()), size_(world.size()), form_(form) {
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
    const MpiBlocks b = mpi_blocks(counts, "an exchanged activation");
    MPI_Allgatherv(mine, b.counts[static_cast<size_t>(shard())], MPI_FLOAT, all, b.counts.data(),
                   b.displacements.data(), MPI_FLOAT, group_);
    Exchanges& e = evaluating_ ? evaluation_ : training_;
    e.seconds += now_seconds() - t0;
    e.floats_received += static_cast<double>(b.total - counts[static_cast<size_t>(shard())]);
    ++e.allgathers;
  };
  g.alltoall = [this](const float* mine, float* from_all, const std::vector<size_t>& counts) {
    const double t0 = now_seconds();
    const MpiBlocks send = mpi_blocks(counts, "an exchanged input gradient");
    const size_t own = counts[static_cast<size_t>(shard())];
    const MpiBlocks receive = mpi_blocks(std::vector<size_t>(static_cast<size_t>(m_), own), "an exchanged input gradient");
    MPI_Alltoallv(mine, send.counts.data(), send.displacements.data(), MPI_FLOAT, from_all, receive.counts.data(),
                  receive.displacements.data(), MPI_FLOAT, group_);
    Exchanges& e = evaluating_ ? evaluation_ : training_;
    e.seconds += now_seconds() - t0;
    e.floats_received += static_cast<double>(receive.total - own);
    ++e.alltoalls;
  };
  return g;
}

void ModelParallel::broadcast_from_first_replica(std::span<float> data) const {
  if (!data.empty()) MPI_Bcast(data.data(), static_cast<int>(data.size()), MPI_FLOAT, 0, replica_);
}

void ModelParallel::share_whole_gradients(std::span<float> grads, const std::vector<models::ParamInfo>& table) const {
  if (form_ == Form::pipeline) return;
  std::vector<float> whole;
  for (const models::ParamInfo& p : table)
    if (p.full_rows == 0) whole.insert(whole.end(), grads.begin() + long(p.offset), grads.begin() + long(p.offset + p.size));
  if (whole.empty()) return;  // the MLP: every tensor is split
  MPI_Bcast(whole.data(), static_cast<int>(whole.size()), MPI_FLOAT, 0, group_);
  const float* from = whole.data();
  for (const models::ParamInfo& p : table)
    if (p.full_rows == 0) {
      std::copy_n(from, p.size, grads.begin() + long(p.offset));
      from += p.size;
    }
}

bool ModelParallel::whole_tensors_equal(std::span<const float> params, const std::vector<models::ParamInfo>& table,
                                        std::span<const float> buffers) const {
  // FNV-1a of this rank's whole tensors' bytes and its buffers, gathered in the group and compared.
  uint64_t h = 1469598103934665603ULL;
  auto hash = [&h](const float* data, size_t n) {
    const auto* b = reinterpret_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n * sizeof(float); ++i) h = (h ^ b[i]) * 1099511628211ULL;
  };
  for (const models::ParamInfo& p : table)
    if (p.full_rows == 0) hash(params.data() + p.offset, p.size);
  hash(buffers.data(), buffers.size());
  std::vector<uint64_t> all(static_cast<size_t>(m_));
  MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, group_);
  int equal = std::all_of(all.begin(), all.end(), [&](uint64_t x) { return x == all[0]; }) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &equal, 1, MPI_INT, MPI_MIN, replica_);  // every group, the same answer
  return equal == 1;
}

std::vector<float> ModelParallel::gather_whole(std::span<const float> mine, const models::ModelSpec& spec) const {
  if (replica() != 0) return {};
  // Group 0's shards, each as its own table lays it out, on rank 0 (shard order = group rank order). Every
  // member learns every count, so that all refuse alike a model over MPI's int counts.
  const uint64_t count = mine.size();
  std::vector<uint64_t> sizes(static_cast<size_t>(m_));
  MPI_Allgather(&count, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, group_);
  const MpiBlocks b = mpi_blocks(std::vector<size_t>(sizes.begin(), sizes.end()), "the whole model");
  std::vector<float> shards(rank_ == 0 ? b.total : 0);
  MPI_Gatherv(mine.data(), static_cast<int>(count), MPI_FLOAT, shards.data(), b.counts.data(), b.displacements.data(),
              MPI_FLOAT, 0, group_);
  if (rank_ != 0) return {};
  // The stages' tables end to end are the whole model's (pipeline_units.hpp).
  if (form_ == Form::pipeline) return shards;

  models::ModelSpec whole_spec = spec;
  whole_spec.shards = 1, whole_spec.shard = 0;
  const models::ModelDescription whole = models::describe(whole_spec);
  std::vector<float> out(whole.param_count());
  for (int j = 0; j < m_; ++j) {
    models::ModelSpec s = spec;
    s.shard = j;
    const models::ModelDescription part = models::describe(s);
    const float* base = shards.data() + b.displacements[static_cast<size_t>(j)];
    for (size_t i = 0; i < part.params.size(); ++i) {
      const models::ParamInfo& p = part.params[i];
      if (p.full_rows == 0 && j > 0) continue;  // held whole by every shard: shard 0's copy
      const size_t row = p.size / static_cast<size_t>(p.shape[0]);
      std::copy_n(base + p.offset, p.size, out.data() + whole.params[i].offset + static_cast<size_t>(p.row_begin) * row);
    }
  }
  return out;
}

Json ModelParallel::record(int64_t steps, size_t params_per_rank, size_t params_whole, bool whole_equal) const {
  const double per_step = steps > 0 ? 1.0 / static_cast<double>(steps) : 0.0;
  return {{"group_size", m_},
          {"replicas", replicas()},
          {"layout", "rank k is shard k mod group_size of replica k / group_size"},
          {"parameters_per_rank", params_per_rank},
          {"parameters_whole_model", params_whole},
          {"activation_allgathers", training_.allgathers},
          {"gradient_alltoalls", training_.alltoalls},
          {"activation_seconds_per_step", training_.seconds * per_step},
          {"activation_bytes_received_per_step", training_.floats_received * 4.0 * per_step},
          {"evaluation_allgathers", evaluation_.allgathers},
          {"evaluation_bytes_received", evaluation_.floats_received * 4.0},
          {"whole_tensors_equal_in_groups", whole_equal},
          {"note", "rank 0's exchanges within its model-parallel group in this attempt: the training steps' per "
                   "step, the evaluations' in all (allgathers of activations and of input gradients, and the reduce-scatters' "
                   "alltoalls of input gradients in groups of more than 2; they are in the step's forward and backward times, not in "
                   "comm); whole_tensors_equal_in_groups: the tensors every rank of a group holds whole (batch "
                   "norm's) and the running statistics have the same bits on every rank at the end"}};
}

}  // namespace dtbench
