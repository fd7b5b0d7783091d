// Data against tensor model parallelism and pipeline stages (reducers/parallelism_choice.hpp): the model-parallel
// exchanges and the pipeline's step on a hand-computed stack, the data-parallel step from the ring's closed form, and the seeds' direction (model
// parallelism for wide layers at small batches, data parallelism for few weights). Exact up to double rounding:
// the formulas are sums of a few products (tolerance 1e-15 s, far below one alpha).
#include <gtest/gtest.h>

#include <vector>

#include "core/error.hpp"
#include "reducers/parallelism_choice.hpp"

namespace dtbench::test {
namespace {

ParallelismInput small_stack() {
  ParallelismInput in;
  in.widths = {4, 8, 2};  // P = 5 x 8 + 9 x 2 = 58 weights
  in.global_batch = 16;
  in.seconds_per_image = 1e-6;
  in.backward_share = 1;
  in.link = {1e-6, 1e-6, 1e-9, 0.5e-9};
  in.options.segment_bytes = size_t{1} << 40;  // whole transfers
  in.options.small_transfer_bytes = 0;
  return in;
}

TEST(ParallelismChoice, ModelParallelExchangesOnAHandComputedStack) {
  // K = 2, B = 16. Layer 1 (4 -> 8): outputs gathered, 4 x 16 x 8 = 512 B in all: alpha + 256 beta. Layer 2
  // (8 -> 2): outputs, 128 B: alpha + 64 beta; its input gradient's 2 partial sums, 2 x 4 x 16 x 8 = 1024 B:
  // alpha + 512 beta, then 512 B summed: 512 gamma. In all 3 alpha + 832 beta + 512 gamma.
  const ParallelismInput in = small_stack();
  EXPECT_NEAR(model_parallel_comm_seconds(in, 2), 3e-6 + 832e-9 + 512 * 0.5e-9, 1e-15);
  // K = 4: layer 1 3 alpha + 3/4 x 512 beta; layer 2 3 alpha + 3/4 x 128 beta; its input gradient (512 B per
  // member) reduce-scattered: an alltoall of 128-B blocks, 3 alpha + 3/4 x 512 beta, 4 blocks of 128 B summed,
  // 3 x 128 gamma, then the sums allgathered, 3 alpha + 3/4 x 512 beta.
  EXPECT_NEAR(model_parallel_comm_seconds(in, 4), 12e-6 + 0.75 * (512 + 128 + 512 + 512) * 1e-9 + 3 * 128 * 0.5e-9,
              1e-15);
}

TEST(ParallelismChoice, DataParallelStepIsTheRingOverlappedWithBackward) {
  const ParallelismInput in = small_stack();
  const ParallelismChoice c = choose_parallelism(in, {2, 4});
  EXPECT_EQ(c.weights, 58);
  for (const ParallelismRow& r : c.rows) {
    const int p = r.ranks;
    const double n = 4 * 58;  // bytes of gradient
    // Patarasuk and Yuan's ring, written out here: 2 (p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma.
    const double ring = 2 * (p - 1) * 1e-6 + 2.0 * (p - 1) / p * n * 1e-9 + double(p - 1) / p * n * 0.5e-9;
    EXPECT_NEAR(r.dp_comm_s, ring, 1e-15);
    EXPECT_NEAR(r.compute_s, 16 * 1e-6 / p, 1e-18);
    EXPECT_NEAR(r.dp_step_s, r.compute_s + std::max(0.0, ring - r.compute_s), 1e-15);  // backward_share 1
    EXPECT_NEAR(r.mp_step_s, r.compute_s + model_parallel_comm_seconds(in, p), 1e-15);
  }
}

TEST(ParallelismChoice, SeedsDirection) {
  // 10 Gb/s Ethernet-like link (alpha 30 us, 1.25 GB/s), 100 us of compute per image.
  ParallelismInput in;
  in.link = {30e-6, 30e-6, 0.8e-9, 0.1e-9};
  in.seconds_per_image = 100e-6;
  // A wide layer at a small batch: 6.5 M weights against 32 images' activations.
  in.widths = {784, 8192, 10};
  in.global_batch = 32;
  for (const ParallelismRow& r : choose_parallelism(in, {2, 8}).rows) EXPECT_EQ(r.faster(), "model") << r.ranks;
  // Few weights at a large batch: 51 k weights against 4096 images' activations.
  in.widths = {784, 64, 10};
  in.global_batch = 4096;
  for (const ParallelismRow& r : choose_parallelism(in, {2, 8}).rows) EXPECT_EQ(r.faster(), "data") << r.ranks;
}

TEST(ParallelismChoice, PipelineOnAHandComputedStack) {
  // K = 2 stages of the 2 layers (4 -> 8: 32 MACs; 8 -> 2: 16 MACs), B = 16 at 1 us an image, M = 4: stage costs
  // 16 us x 32/48 and x 16/48. The boundary after layer 1 carries 4 x (16/4) x 8 = 128 B each way: x = alpha + 128
  // beta = 1.128 us, below the slowest stage's 10.667/4 us a micro-batch (forward and backward: 1F1B's slot), so hidden: step = (4 + 1) x 10.667/4 us
  // + 2 x 1.128 us; idle = 5 x 10.667/4 - 16/2 us (bubble and imbalance); comm = 2 x 1.128 us.
  ParallelismInput in = small_stack();
  in.micro_batches = 4;
  const PipelineCost c = pipeline_cost(in, 2);
  const double c_max = 16e-6 * 32 / 48, x = 1e-6 + 128e-9;
  EXPECT_EQ(c.stage_of_layer, (std::vector<int>{0, 1}));
  EXPECT_NEAR(c.step_s, 5 * c_max / 4 + 2 * x, 1e-15);
  EXPECT_NEAR(c.idle_s, 5 * c_max / 4 - 8e-6, 1e-15);
  EXPECT_NEAR(c.comm_s, 2 * x, 1e-15);
  // M = 16 micro-batches of one image: the slowest stage's micro-batch (0.667 us) is now faster than the link
  // (1 us + 32 beta), which paces all M + K - 1 slots.
  in.micro_batches = 16;
  const PipelineCost d = pipeline_cost(in, 2);
  const double x1 = 1e-6 + 32e-9;
  EXPECT_NEAR(d.step_s, 17 * x1 + 2 * x1, 1e-15);
  EXPECT_NEAR(d.comm_s, 2 * x1 + 17 * (x1 - c_max / 16), 1e-15);
  // Default M: 4 per rank, at most B.
  in.micro_batches = 0;
  EXPECT_EQ(pipeline_cost(in, 2).micro_batches, 8);
  // More stages than layers: not possible.
  const ParallelismChoice choice = choose_parallelism(small_stack(), {2, 3});
  EXPECT_TRUE(choice.rows[0].pp_possible);
  EXPECT_FALSE(choice.rows[1].pp_possible);
}

TEST(ParallelismChoice, PipelineForADeepStackOfWideLayers) {
  // Eight 1024 x 1024 layers (8.4 M weights) at a batch of 64 on a 10 Gb/s Ethernet-like link, 100 us an image:
  // data parallelism's allreduce of 34 MB dwarfs the compute, tensor model parallelism gathers activations at
  // every layer, and a pipeline of 8 one-layer stages sends one 64 x 1024 activation per boundary and micro-batch.
  ParallelismInput in;
  in.link = {30e-6, 30e-6, 0.8e-9, 0.1e-9};
  in.seconds_per_image = 100e-6;
  in.widths = std::vector<int64_t>(9, 1024);
  in.global_batch = 64;
  const ParallelismRow r = choose_parallelism(in, {8}).rows[0];
  EXPECT_EQ(r.faster(), "pipeline") << "DP " << r.dp_step_s << " MP " << r.mp_step_s << " PP " << r.pp_step_s;
  EXPECT_LT(r.pp_step_s, r.mp_step_s);
  EXPECT_LT(r.mp_step_s, r.dp_step_s);
}

TEST(ParallelismChoice, ImpossibleLayoutsAndBadInputs) {
  ParallelismInput in = small_stack();
  const ParallelismChoice c = choose_parallelism(in, {4, 32});
  EXPECT_FALSE(c.rows[0].mp_possible);  // 4 ranks, 2 outputs in the last layer
  EXPECT_EQ(c.rows[0].faster(), "data");
  EXPECT_FALSE(c.rows[1].dp_possible);  // 32 ranks, 16 images
  EXPECT_EQ(c.rows[1].faster(), "none");
  EXPECT_THROW(choose_parallelism(in, {1}), BadInput);
  in.widths = {4};
  EXPECT_THROW(choose_parallelism(in, {2}), BadInput);
  in = small_stack();
  in.widths = {4, 0};
  EXPECT_THROW(choose_parallelism(in, {2}), BadInput);
  in = small_stack();
  in.seconds_per_image = 0;
  EXPECT_THROW(choose_parallelism(in, {2}), BadInput);
  in = small_stack();
  in.reducer = "nosuch";
  EXPECT_THROW(choose_parallelism(in, {2}), BadInput);
}

}  // namespace
}  // namespace dtbench::test
