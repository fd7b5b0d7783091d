// The model a run trains: its spec from the config and the data's shape, validated alike on every rank,
// built on the configured backend (cpu: oneDNN; gpu: cuDNN, one device per rank), with rank 0's initial
// weights broadcast to every rank.
#pragma once

#include <cstdint>
#include <memory>

#include "core/json.hpp"
#include "workloads/data/dataset.hpp"
#include "workloads/backend/train_model.hpp"
#include "workloads/train/world.hpp"

namespace dtbench {

// Throws SameOnAllRanks (exit 2) when the network cannot take this spec (e.g. ResNet-18 on 28x28 images).
std::unique_ptr<TrainModel> make_train_model(const Json& cfg, const data::Dataset& train, const World& world);

}  // namespace dtbench
