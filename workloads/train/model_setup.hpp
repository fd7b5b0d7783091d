// The model a run trains: its spec from the config and the data's shape, validated alike on every rank,
// built on the configured backend (cpu: oneDNN; gpu: cuDNN, one device per rank), with rank 0's initial
// weights broadcast to every rank.
#pragma once

#include <cstdint>
#include <memory>

#include "core/json.hpp"
#include "workloads/data/dataset.hpp"
#include "workloads/backend/train_model.hpp"
#include "workloads/models/model_spec.hpp"
#include "workloads/train/model_parallel.hpp"
#include "workloads/train/world.hpp"

namespace dtbench {

// The model spec of a run: the config's model on the data's shape, split for this rank when `model_parallel` is
// given (else whole).
models::ModelSpec train_model_spec(const Json& cfg, const data::Dataset& train, const ModelParallel* model_parallel);

// Synthetic data, whose size and shape the config gives: BadInput when the set (every rank makes all of it) or the
// model's weights and gradients on it cannot fit in the memory of the `node_ranks` ranks on this machine, before any
// of it is made (a 10.7 GB set on 3 ranks was OOM-killed; a model too large waited minutes for its set first).
void check_synthetic_fits(const Json& cfg, const ModelParallel* model_parallel, int node_ranks);

// Throws SameOnAllRanks (exit 2) when the network cannot take this spec (e.g. ResNet-18 on 28x28 images), or when
// its weights and activations cannot fit in the memory of the `node_ranks` ranks on this machine (lower bounds;
// `eval_batch`: the largest batch of an evaluation, made by `eval_node_ranks` of them). With tensor model parallelism
// (model_parallel not null) each rank holds its shard, joined to its group, and the first replica's shards are
// broadcast to the others.
std::unique_ptr<TrainModel> make_train_model(const Json& cfg, const data::Dataset& train, const World& world,
                                             ModelParallel* model_parallel, int node_ranks, int64_t eval_batch,
                                             int eval_node_ranks);

}  // namespace dtbench
