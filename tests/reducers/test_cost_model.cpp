// The cost model: each algorithm's coefficients against the closed forms of the papers (Thakur,
// Rabenseifner and Gropp 2005; Patarasuk and Yuan 2009) with segmenting turned off (one huge segment),
// the tree's message counts against hand-counted heaps, and the fit recovering known parameters from
// synthetic sweeps (exact data, so the tolerance is rounding only).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "reducers/cost_model.hpp"

namespace dtbench {
namespace {

ReducerOptions unsegmented() {
  ReducerOptions o;
  o.segment_bytes = size_t{1} << 40;
  o.small_transfer_bytes = 0;
  return o;
}

// a: all messages, whatever their latency class.
void expect_terms(const CostTerms& t, double a, double b, double c) {
  EXPECT_DOUBLE_EQ(t.alpha + t.alpha_rndv, a);
  EXPECT_DOUBLE_EQ(t.beta, b);
  EXPECT_DOUBLE_EQ(t.gamma, c);
}

TEST(CostModel, RingIsPatarasukYuan) {
  const double n = 1 << 20;
  // 2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma
  expect_terms(cost_terms("ring", 4, n, unsegmented()), 6, 1.5 * n, 0.75 * n);
  expect_terms(cost_terms("ring", 5, n, unsegmented()), 8, 1.6 * n, 0.8 * n);
  // Segmented: 1 MiB chunks in 256 KiB segments = 4 messages per step.
  ReducerOptions o = unsegmented();
  o.segment_bytes = 256 << 10;
  EXPECT_DOUBLE_EQ(cost_terms("ring", 2, 2.0 * (1 << 20), o).alpha_rndv, 2 * 1 * 4);
}

TEST(CostModel, SmallTransfersAreCutIntoEagerSegments) {
  // Default rule: a transfer of up to 16 KiB goes in 4032-byte segments, a larger one in 1 MiB ones.
  ReducerOptions o;
  // Butterfly, 2 ranks, 16000 bytes: one transfer of 16000 bytes in 4 eager segments of 4000 bytes.
  CostTerms t = cost_terms("butterfly", 2, 16000, o);
  EXPECT_DOUBLE_EQ(t.alpha, 4);
  EXPECT_DOUBLE_EQ(t.alpha_rndv, 0);
  // 20000 bytes: above 16 KiB, one 20000-byte rendezvous message.
  t = cost_terms("butterfly", 2, 20000, o);
  EXPECT_DOUBLE_EQ(t.alpha, 0);
  EXPECT_DOUBLE_EQ(t.alpha_rndv, 1);
}

TEST(CostModel, MessagesSplitIntoEagerAndRendezvousAtTheLimit) {
  // Ring on 2 ranks: two messages of n/2 bytes. 8 KiB -> 4 KiB messages: eager; 8 KiB + 8 -> rendezvous.
  CostTerms small = cost_terms("ring", 2, 8192, unsegmented(), 4096);
  EXPECT_DOUBLE_EQ(small.alpha, 2);
  EXPECT_DOUBLE_EQ(small.alpha_rndv, 0);
  CostTerms large = cost_terms("ring", 2, 8200, unsegmented(), 4096);
  EXPECT_DOUBLE_EQ(large.alpha, 0);
  EXPECT_DOUBLE_EQ(large.alpha_rndv, 2);
  // Halving-doubling on 8 ranks, 64 KiB: its 3 steps move 32, 16 and 8 KiB, twice each (halving,
  // then doubling); with an 8 KiB limit the 8 KiB messages are eager.
  CostTerms hd = cost_terms("halving_doubling", 8, 65536, unsegmented(), 8192);
  EXPECT_DOUBLE_EQ(hd.alpha, 2);
  EXPECT_DOUBLE_EQ(hd.alpha_rndv, 4);
}

TEST(CostModel, ButterflyIsRecursiveDoublingWithTheFold) {
  const double n = 1000;
  expect_terms(cost_terms("butterfly", 8, n, unsegmented()), 3, 3 * n, 3 * n);
  // p = 6: fold to 4 (2 steps), plus one message in and one out, one extra reduction.
  expect_terms(cost_terms("butterfly", 6, n, unsegmented()), 2 + 2, (2 + 2) * n, (2 + 1) * n);
}

TEST(CostModel, HalvingDoublingIsRabenseifner) {
  const double n = 4096;
  // 2 lg p alpha + 2 (p-1)/p n beta + (p-1)/p n gamma
  expect_terms(cost_terms("halving_doubling", 8, n, unsegmented()), 6, 2 * 7.0 / 8 * n, 7.0 / 8 * n);
  expect_terms(cost_terms("halving_doubling", 2, n, unsegmented()), 2, n, 0.5 * n);
  expect_terms(cost_terms("halving_doubling", 3, n, unsegmented()), 2 + 2, n + 2 * n, 0.5 * n + n);
  // The MPI baseline uses the same (unsegmented) formula.
  ReducerOptions small = unsegmented();
  small.segment_bytes = 64;
  expect_terms(cost_terms("mpi", 8, n, small), 6, 2 * 7.0 / 8 * n, 7.0 / 8 * n);
}

TEST(CostModel, TreeCountsMessagesOnTheCriticalPath) {
  const double n = 100;
  // p = 2: one message up (reduced), one down.
  expect_terms(cost_terms("tree", 2, n, unsegmented()), 2, 2 * n, n);
  // p = 3: the root receives two children in turn (2 up); sends left then right (2 down).
  expect_terms(cost_terms("tree", 3, n, unsegmented()), 4, 4 * n, 2 * n);
  // p = 7 (the seeds' example, a full tree of depth 2): 2 x 2 up, 2 x 2 down.
  expect_terms(cost_terms("tree", 7, n, unsegmented()), 8, 8 * n, 4 * n);
  // p = 4 (rank 3 under rank 1): up 3->1 (1), 1->0 (2), then 2->0 (3): 3 up;
  // down 0->1 (1), 0->2 and 1->3 (2 each): 2 down.
  expect_terms(cost_terms("tree", 4, n, unsegmented()), 5, 5 * n, 3 * n);
}

TEST(CostModel, ParameterServerChargesTheServersLink) {
  const double n = 1 << 20;
  ReducerOptions o = unsegmented();
  o.servers = 1;
  expect_terms(cost_terms("parameter_server", 4, n, o), 6, 6 * n, 3 * n);
  o.servers = 4;  // fully sharded: the ring's volume
  EXPECT_DOUBLE_EQ(cost_terms("parameter_server", 4, n, o).beta, cost_terms("ring", 4, n, o).beta);
  EXPECT_THROW(cost_terms("allgather", 4, n, o), BadInput);
  expect_terms(cost_terms("ring", 1, n, o), 0, 0, 0);
}

// A synthetic sweep: times made exactly from known parameters, as `dtbench allreduce --json` writes.
Json synthetic_sweep(int ranks, double gamma, const std::map<std::string, CostParams>& truth, size_t segment) {
  ReducerOptions o;
  o.segment_bytes = segment;  // and the default small-transfer rule
  Json rows = Json::array(), red = Json::array();
  for (double bytes = 4096; bytes <= 64.0 * (1 << 20); bytes *= 2) {
    for (const auto& [name, c] : truth) {
      CostParams full = c;
      full.gamma = gamma;
      double t = predict_seconds(cost_terms(name, ranks, bytes, o), full);
      rows.push_back({{"reducer", name}, {"bytes", bytes}, {"time_us", t * 1e6}, {"wrong", 0}});
    }
    red.push_back({{"bytes", bytes}, {"time_us", (0.2e-6 + gamma * bytes) * 1e6}});
  }
  return {{"kind", "dtbench.allreduce"},
          {"options", {{"segment_bytes", segment}, {"servers", 1}}},  // small-transfer rule: defaults
          {"ranks", ranks},
          {"rows", rows},
          {"reduction", red}};
}

TEST(CostModel, FitRecoversKnownParameters) {
  const double gamma = 0.05e-9;
  // {alpha, alpha_rndv, beta, gamma (ignored: the shared one)}
  std::map<std::string, CostParams> truth = {{"ring", {1e-6, 3e-6, 0.2e-9, 0}},
                                             {"halving_doubling", {0.8e-6, 2e-6, 0.15e-9, 0}},
                                             {"butterfly", {0.7e-6, 1.5e-6, 0.1e-9, 0}},
                                             {"tree", {0.5e-6, 1e-6, 0.12e-9, 0}},
                                             {"parameter_server", {1.1e-6, 2.5e-6, 0.11e-9, 0}},
                                             {"mpi", {0.6e-6, 1.2e-6, 0.13e-9, 0}}};
  // Two rank counts, as the sweep script's 2- and 4-rank runs.
  FittedModel m = fit_cost_model({synthetic_sweep(2, gamma, truth, 1 << 20), synthetic_sweep(4, gamma, truth, 1 << 20)});
  EXPECT_NEAR(m.gamma, gamma, 1e-9 * gamma);
  for (const auto& [name, c] : truth) {
    ASSERT_TRUE(m.params.count(name)) << name;
    // tree and parameter_server send whole buffers, all above the eager limit at 4 KiB and up: their
    // eager alpha is not identifiable and takes the rendezvous one (FittedModel's rule).
    const bool has_eager = cost_terms(name, 2, 4096, ReducerOptions{}).alpha > 0;
    EXPECT_NEAR(m.params[name].alpha, has_eager ? c.alpha : c.alpha_rndv, 1e-6 * c.alpha) << name;
    EXPECT_NEAR(m.params[name].alpha_rndv, c.alpha_rndv, 1e-6 * c.alpha_rndv) << name;
    EXPECT_NEAR(m.params[name].beta, c.beta, 1e-6 * c.beta) << name;
    EXPECT_LT(m.rms_rel_error[name], 1e-9) << name;
    EXPECT_EQ(m.min_bytes[name], 4096);
    EXPECT_EQ(m.max_bytes[name], 64.0 * (1 << 20));
  }
}

TEST(CostModel, FitRejectsMixedOptionsAndForeignFiles) {
  std::map<std::string, CostParams> truth = {{"ring", {1e-6, 3e-6, 0.2e-9, 0}}};
  EXPECT_THROW(fit_cost_model({synthetic_sweep(2, 1e-11, truth, 1 << 20), synthetic_sweep(2, 1e-11, truth, 1 << 16)}),
               BadInput);
  EXPECT_THROW(fit_cost_model({Json{{"kind", "dtbench.run"}}}), BadInput);
  EXPECT_THROW(fit_cost_model({}), BadInput);
}

}  // namespace
}  // namespace dtbench
