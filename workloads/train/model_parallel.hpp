// Model parallelism's side of a run, in either form the seeds name: tensor model parallelism (the layers are
// workloads/cpu/split_layer.hpp) or pipeline stages (the schedules are pipeline.hpp, the cut
// workloads/models/pipeline_units.hpp). Both use the same 2-D layout; "shard" below is a pipeline's stage.
//
// The 2-D layout: K ranks form K/M data-parallel replicas, each a model-parallel group of M consecutive ranks
// (rank k is shard k mod M of replica k / M). A group's ranks see the same batch and hold different output units
// of every convolution and fully connected layer; they exchange activations every layer and step, so they are
// consecutive ranks, which a launcher that fills nodes in order puts on one node (Shoeybi et al. 2019's layout).
// The gradient of a shard is averaged over the replicas holding that shard: the reducer runs on the replica
// communicator, the ranks with the same shard index. Tensors a shard holds whole (batch norm's) get the same gradient on every rank of a
// group, but each shard's replicas average them in buckets of that shard's shapes, so in another order: the
// group's rank 0 shares its average (share_whole_gradients), which keeps every copy equal.
#pragma once

#include <mpi.h>

#include <span>
#include <utility>
#include <vector>

#include "core/json.hpp"
#include "workloads/models/hooks.hpp"
#include "workloads/models/model_spec.hpp"
#include "workloads/train/world.hpp"

namespace dtbench {

class ModelParallel {
 public:
  enum class Form { tensor, pipeline };
  // group_size M divides the world's size (config rules).
  ModelParallel(const World& world, int group_size, Form form = Form::tensor);
  ~ModelParallel();
  ModelParallel(const ModelParallel&) = delete;
  ModelParallel& operator=(const ModelParallel&) = delete;

  Form form() const { return form_; }
  int group_size() const { return m_; }
  int shard() const { return rank_ % m_; }  // the pipeline's stage
  // The group's own communicator, rank = shard (pipeline.cpp duplicates it for its stages' Comm).
  MPI_Comm group_comm() const { return group_; }
  // Pipeline: the units [first, end) of every stage (pipeline.hpp cuts them), set before the model is built.
  void set_stage_units(std::vector<std::pair<int, int>> units) { stage_units_ = std::move(units); }
  const std::vector<std::pair<int, int>>& stage_units() const { return stage_units_; }
  int replica() const { return rank_ / m_; }
  int replicas() const { return size_ / m_; }
  // The ranks that hold this rank's shard, one per replica, in replica order (the gradient reducer's).
  MPI_Comm replica_comm() const { return replica_; }

  // The group for TrainModel::set_model_parallel_group: MPI_Allgatherv on the group's own communicator (the
  // compute thread's, while the reducer's thread may be reducing), timed.
  models::ModelParallelGroup group();
  // Rank r of each replica's shard receives replica 0's shard r: the shards of every replica start equal.
  void broadcast_from_first_replica(std::span<float> data) const;
  // Tensor form: the gradients of the tensors that every rank of a group holds whole (ParamInfo::full_rows 0),
  // from the group's rank 0 to the others (collective over the group). Pipeline: nothing (no tensor is shared).
  void share_whole_gradients(std::span<float> grads, const std::vector<models::ParamInfo>& table) const;
  // Whether every rank of each group holds the same bits of those tensors and of the batch-norm running
  // statistics (buffers) (collective over the world).
  bool whole_tensors_equal(std::span<const float> params, const std::vector<models::ParamInfo>& table,
                           std::span<const float> buffers) const;
  // Collective over every rank: rank 0 returns the whole model's parameters in the canonical layout of spec
  // with one shard (one stage), assembled from group 0's shards or stages (spec: this run's); the others an
  // empty vector.
  std::vector<float> gather_whole(std::span<const float> mine, const models::ModelSpec& spec) const;

  // Between set_evaluating(true) and (false) the exchanges are evaluation forwards', counted apart.
  void set_evaluating(bool on) { evaluating_ = on; }

  // extra.model_parallel of the record: the layout and this rank's exchanges per training step (rank 0's view);
  // whole_equal: whole_tensors_equal's answer.
  Json record(int64_t steps, size_t params_per_rank, size_t params_whole, bool whole_equal) const;

 private:
  int m_ = 1, rank_ = 0, size_ = 1;
  Form form_ = Form::tensor;
  std::vector<std::pair<int, int>> stage_units_;
  MPI_Comm group_ = MPI_COMM_NULL, replica_ = MPI_COMM_NULL;
  struct Exchanges {
    double seconds = 0, floats_received = 0;
    int64_t allgathers = 0, alltoalls = 0;
  };
  Exchanges training_, evaluation_;
  bool evaluating_ = false;
};

}  // namespace dtbench
