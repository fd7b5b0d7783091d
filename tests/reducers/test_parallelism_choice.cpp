// Data against tensor model parallelism (reducers/parallelism_choice.hpp): the model-parallel exchanges on a
// hand-computed stack, the data-parallel step from the ring's closed form, and the seeds' direction (model
// parallelism for wide layers at small batches, data parallelism for few weights). Exact up to double rounding:
// the formulas are sums of a few products (tolerance 1e-15 s, far below one alpha).
#include <gtest/gtest.h>

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
  // K = 4: layer 1 3 alpha + 3/4 x 512 beta; layer 2 3 alpha + 3/4 x 128 beta; the 4 partial sums, 4 x 512 B:
  // 3 alpha + 3/4 x 2048 beta, and 3 x 512 gamma.
  EXPECT_NEAR(model_parallel_comm_seconds(in, 4), 9e-6 + 0.75 * (512 + 128 + 2048) * 1e-9 + 3 * 512 * 0.5e-9, 1e-15);
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
