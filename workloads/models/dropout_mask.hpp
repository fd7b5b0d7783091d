// Dropout's keep masks, drawn on the host the same way for every backend (workloads/cpu/dropout.hpp,
// workloads/gpu/dropout.hpp).
//
// A sample's mask is a function of the run's seed, the optimizer step and the sample's position in that step's
// global batch, and of nothing else: sample i of a forward whose first sample sits at position `first_sample`
// keeps feature j when u_j >= p, where u_0, u_1, ... are the uniforms of Rng(seed, {kDropoutStream, step,
// first_sample + i}). So
//  - K ranks with batch b draw exactly the masks of 1 rank with batch K*b (rank r's samples are positions
//    r*b .. r*b + b - 1 of the global batch, workloads/data/shard.hpp), as do m accumulated micro-batches and
//    the micro-batches of a pipeline: data parallelism with dropout is the single-node algorithm, not K ranks
//    dropping the same units of their i-th samples;
//  - a run resumed from a checkpoint draws the masks the uninterrupted run drew (the step is restored).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dtbench::models {

// Where the next training forward sits: the optimizer step (from the run's start) and the position of its first
// sample in that step's global batch. The trainer sets it before every training forward (TrainModel).
struct BatchPosition {
  uint64_t step = 0;
  uint64_t first_sample = 0;
};

// mask[i * per_sample + j] = 1 (kept) or 0 for samples i < samples and features j < per_sample, as above.
void dropout_keep_mask(uint64_t seed, const BatchPosition& at, float p, size_t samples, size_t per_sample,
                       uint8_t* mask);

}  // namespace dtbench::models
