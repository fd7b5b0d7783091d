// The bytes each rank sends and receives in one allreduce, as the Comm counts them on the thread
// transport, against exact references: the textbook closed forms where the buffer divides evenly (ring
// and halving-doubling 2(K-1)/K S per rank, one parameter server (K-1) S and each worker S, recursive
// doubling lg K S; Patarasuk and Yuan 2009, Thakur, Rabenseifner and Gropp 2005), hand-worked cases of
// uneven chunks and folded rank counts, and every reducer's own formula (reducers/traffic.hpp) on
// every configuration of the reducer tests, K = 1..9, sizes that no K divides.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "reducers/reducer.hpp"
#include "reducers/registry.hpp"
#include "reducers/thread_comm.hpp"
#include "reducers/traffic.hpp"
#include "tests/reducers/reducer_cases.hpp"

namespace dtbench {
namespace {

// What each rank's Comm counted in one allreduce of `count` floats (index = rank).
std::vector<CommTraffic> counted(const std::string& name, const ReducerOptions& options, int ranks, size_t count) {
  std::vector<CommTraffic> out(static_cast<size_t>(ranks));
  run_ranks(ranks, [&](Comm& c) {
    auto r = make_reducer(name, c, options);
    std::vector<float> buf(count, 1.0f);
    c.reset_traffic();
    r->allreduce(buf.data(), count);
    out[static_cast<size_t>(c.rank())] = c.traffic();
  });
  return out;
}

// Sent and received bytes per rank, for comparison with a formula.
std::vector<RankBytes> bytes_of(const std::vector<CommTraffic>& t) {
  std::vector<RankBytes> out;
  for (const auto& x : t) out.push_back({x.sent_bytes, x.received_bytes});
  return out;
}

// Every rank sends and receives b[rank] x S bytes.
std::vector<RankBytes> times_s(const std::vector<uint64_t>& b, uint64_t S) {
  std::vector<RankBytes> out;
  for (uint64_t k : b) out.push_back({k * S, k * S});
  return out;
}

std::vector<RankBytes> same_for_all(int ranks, uint64_t bytes) {
  return times_s(std::vector<uint64_t>(static_cast<size_t>(ranks), 1), bytes);
}

constexpr size_t kAllK = 840;  // lcm(1..8): divisible by every K here

TEST(Traffic, RingSendsAndReceivesTwoKMinusOneOverKOfTheBufferOnEveryRank) {
  for (int K = 2; K <= 8; ++K)
    for (size_t count : {kAllK, 3 * kAllK}) {
      const uint64_t S = count * sizeof(float);
      EXPECT_EQ(bytes_of(counted("ring", {}, K, count)), same_for_all(K, 2 * (K - 1) * S / K))
          << "K=" << K << " count=" << count;
    }
}

TEST(Traffic, RingWithUnevenChunks) {
  // 10 floats on 3 ranks: chunks of 3, 3, 4 floats (12, 12, 16 bytes). Rank i sends every chunk but
  // i+1, then every chunk but i+2, and receives every chunk but i, then every chunk but i+1:
  // rank 0 sends 80-12-16 = 52 and receives 80-12-12 = 56; rank 1 52 and 52; rank 2 56 and 52.
  EXPECT_EQ(bytes_of(counted("ring", {}, 3, 10)), (std::vector<RankBytes>{{52, 56}, {52, 52}, {56, 52}}));
  // 2 floats on 4 ranks: chunks 0, 1, 0, 1 floats; sent_i = 16 - 4 L(i+1) - 4 L(i+2) with one of
  // L(i+1), L(i+2) one float, so 12 bytes each way on every rank.
  EXPECT_EQ(bytes_of(counted("ring", {}, 4, 2)), same_for_all(4, 12));
}

TEST(Traffic, OneParameterServerCarriesKMinusOneBuffersEachWayAndEachWorkerOne) {
  for (int K = 2; K <= 8; ++K)
    for (size_t count : {size_t{1}, size_t{1001}, kAllK}) {
      const uint64_t S = count * sizeof(float);
      std::vector<RankBytes> want = same_for_all(K, S);
      want[0] = {(K - 1) * S, (K - 1) * S};
      EXPECT_EQ(bytes_of(counted("parameter_server", {}, K, count)), want) << "K=" << K << " count=" << count;
    }
}

TEST(Traffic, ShardedParameterServers) {
  // 4 ranks, 2 servers, 5 floats: shards of 2 and 3 floats. A server pushes the other server's shard
  // and pulls it back (S - own each way) and receives, then sends, its own shard from and to the 3
  // others: S + 2 own. Workers: S each way.
  ReducerOptions o;
  o.servers = 2;
  EXPECT_EQ(bytes_of(counted("parameter_server", o, 4, 5)),
            (std::vector<RankBytes>{{20 + 2 * 8, 20 + 2 * 8}, {20 + 2 * 12, 20 + 2 * 12}, {20, 20}, {20, 20}}));
  // S = K servers: a direct-exchange reduce-scatter and allgather, 2(K-1)/K S like the ring.
  o.servers = 4;
  EXPECT_EQ(bytes_of(counted("parameter_server", o, 4, 400)), same_for_all(4, 2 * 3 * 1600 / 4));
}

TEST(Traffic, TreeMovesOneBufferPerLinkEachWay) {
  const uint64_t S = 1001 * sizeof(float);
  // Heap on 7 ranks: the root has 2 children, ranks 1 and 2 have 2 children and a parent, 3..6 leaves.
  EXPECT_EQ(bytes_of(counted("tree", {}, 7, 1001)), times_s({2, 3, 3, 1, 1, 1, 1}, S));
  EXPECT_EQ(bytes_of(counted("tree", {}, 2, 1001)), times_s({1, 1}, S));
  EXPECT_EQ(bytes_of(counted("tree", {}, 4, 1001)), times_s({2, 2, 1, 1}, S));  // rank 1 has child 3
  // K-1 links, each carrying S up and S down.
  for (int K = 2; K <= 8; ++K) {
    uint64_t total = 0;
    for (const auto& b : bytes_of(counted("tree", {}, K, 1001))) total += b.sent;
    EXPECT_EQ(total, 2 * (K - 1) * S) << "K=" << K;
  }
}

TEST(Traffic, RecursiveDoublingSwapsTheWholeBufferLogKTimesAndFoldsTheRest) {
  const uint64_t S = 1001 * sizeof(float);
  EXPECT_EQ(bytes_of(counted("butterfly", {}, 2, 1001)), times_s({1, 1}, S));
  EXPECT_EQ(bytes_of(counted("butterfly", {}, 4, 1001)), times_s({2, 2, 2, 2}, S));
  EXPECT_EQ(bytes_of(counted("butterfly", {}, 8, 1001)), same_for_all(8, 3 * S));
  // K = 6: p' = 4, r = 2. Ranks 0 and 2 fold into 1 and 3 (S each way), which then run the 2 steps
  // (3 S each way with the fold); ranks 4 and 5 run the 2 steps only.
  EXPECT_EQ(bytes_of(counted("butterfly", {}, 6, 1001)), times_s({1, 3, 1, 3, 2, 2}, S));
  // K = 7: p' = 4, r = 3.
  EXPECT_EQ(bytes_of(counted("butterfly", {}, 7, 1001)), times_s({1, 3, 1, 3, 1, 3, 2}, S));
  // K = 3: p' = 2, r = 1.
  EXPECT_EQ(bytes_of(counted("butterfly", {}, 3, 1001)), times_s({1, 2, 1}, S));
}

TEST(Traffic, HalvingDoublingMovesTwoKMinusOneOverKOfTheBufferAndFoldsTheRest) {
  for (int K : {2, 4, 8}) {
    const uint64_t S = kAllK * sizeof(float);
    EXPECT_EQ(bytes_of(counted("halving_doubling", {}, K, kAllK)), same_for_all(K, 2 * (K - 1) * S / K))
        << "K=" << K;
  }
  // Non-powers of two (Thakur et al. 2005, section 4.5): the folded-out even ranks move S each way;
  // their odd partners S more than the 2(p'-1)/p' S of the power-of-two part.
  const uint64_t S = kAllK * sizeof(float);  // 3360 bytes
  EXPECT_EQ(bytes_of(counted("halving_doubling", {}, 3, kAllK)), times_s({1, 2, 1}, S));
  const uint64_t three_halves = 3 * S / 2;  // 2(p'-1)/p' S for p' = 4
  EXPECT_EQ(bytes_of(counted("halving_doubling", {}, 6, kAllK)),
            (std::vector<RankBytes>{{S, S},
                                    {S + three_halves, S + three_halves},
                                    {S, S},
                                    {S + three_halves, S + three_halves},
                                    {three_halves, three_halves},
                                    {three_halves, three_halves}}));
  // Uneven blocks: 5 floats on 4 ranks, blocks of 1, 1, 1, 2 floats. Rank v sends every block but its
  // own in the halving and the halves holding it in the doubling (the pair {v, v^1}, then v): rank 0
  // sends 16 + 8 + 4 = 28 bytes, rank 3: 12 + 12 + 8 = 32; each receives the same.
  EXPECT_EQ(bytes_of(counted("halving_doubling", {}, 4, 5)),
            (std::vector<RankBytes>{{28, 28}, {28, 28}, {32, 32}, {32, 32}}));
}

TEST(Traffic, HierarchicalSendsOneBufferPerRankWithinANodeAndTheLeadersRunTheirAlgorithm) {
  const uint64_t S = kAllK * sizeof(float);
  ReducerOptions o;
  o.ranks_per_node = 3;  // 6 ranks: nodes {0, 1, 2} and {3, 4, 5}; leaders 0 and 3 run a 2-rank ring (S each way)
  EXPECT_EQ(bytes_of(counted("hierarchical", o, 6, kAllK)), times_s({3, 1, 1, 3, 1, 1}, S));
  o.ranks_per_node = 2;  // 5 ranks: {0, 1}, {2, 3}, {4}; leaders 0, 2, 4 run a 3-rank ring (4/3 S each way)
  EXPECT_EQ(bytes_of(counted("hierarchical", o, 5, kAllK)),
            (std::vector<RankBytes>{{S + 4 * S / 3, S + 4 * S / 3}, {S, S}, {S + 4 * S / 3, S + 4 * S / 3}, {S, S},
                                    {4 * S / 3, 4 * S / 3}}));
  o.ranks_per_node = 0;  // one node (the thread transport's): the leader receives and sends K - 1 buffers
  EXPECT_EQ(bytes_of(counted("hierarchical", o, 4, kAllK)), times_s({3, 1, 1, 1}, S));
  o.nodes = {0, 1, 0, 1};  // round-robin: leaders 0 and 1, with 2 and 3 in their nodes
  EXPECT_EQ(bytes_of(counted("hierarchical", o, 4, kAllK)), times_s({2, 2, 1, 1}, S));
}

// Every configuration of the reducer tests (segment sizes included: segments partition a transfer,
// so they never change the bytes) against its formula, on 1..9 ranks and sizes no K divides. A reducer
// without a formula moves its bytes outside the Comm (shared_memory): the Comm must count nothing.
TEST(Traffic, EveryReducerMatchesItsFormula) {
  for (const auto& rc : test::reducer_cases(false))
    for (int K = 1; K <= 9; ++K)
      for (size_t count : {size_t{0}, size_t{1}, size_t{3}, size_t{7}, size_t{100}, size_t{1001}, size_t{4001},
                           kAllK, size_t{10007}}) {
        if (count > rc.max_count) continue;
        const ReducerOptions o = rc.for_ranks(K);
        const std::vector<CommTraffic> got = counted(rc.name, o, K, count);
        const std::string what = rc.label + " K=" + std::to_string(K) + " count=" + std::to_string(count);
        if (reducer_info(rc.name).traffic == nullptr) {
          for (const auto& t : got) EXPECT_EQ(t, CommTraffic{}) << what;
          continue;
        }
        EXPECT_EQ(bytes_of(got), expected_traffic(rc.name, K, count * sizeof(float), o)) << what;
        uint64_t sent = 0, received = 0, sent_msgs = 0, received_msgs = 0;
        for (const auto& t : got) {
          sent += t.sent_bytes;
          received += t.received_bytes;
          sent_msgs += t.sent_messages;
          received_msgs += t.received_messages;
        }
        EXPECT_EQ(sent, received) << what;  // every byte sent is received once
        EXPECT_EQ(sent_msgs, received_msgs) << what;
      }
}

TEST(Traffic, TheFormulaRefusesWhatItCannotAnswer) {
  EXPECT_THROW(expected_traffic("nosuch", 2, 4), BadInput);
  EXPECT_THROW(expected_traffic("mpi", 2, 4), BadInput);  // bytes move inside MPI
  EXPECT_THROW(expected_traffic("ring", 0, 4), BadInput);
  EXPECT_THROW(expected_traffic("ring", 2, 6), BadInput);  // not whole floats
  ReducerOptions o;
  o.servers = 3;
  EXPECT_THROW(expected_traffic("parameter_server", 2, 4, o), BadInput);
  EXPECT_EQ(expected_traffic("ring", 1, 400), (std::vector<RankBytes>{{0, 0}}));
  ReducerOptions h;
  h.leader = "shared_memory";  // the leaders are on different nodes
  EXPECT_THROW(expected_traffic("hierarchical", 4, 400, h), BadInput);
  // MPI_Allreduce among the leaders: its bytes move inside MPI, so only the nodes' own transfers are counted.
  h.leader = "mpi";
  h.ranks_per_node = 2;
  EXPECT_EQ(expected_traffic("hierarchical", 5, 400, h),
            (std::vector<RankBytes>{{400, 400}, {400, 400}, {400, 400}, {400, 400}, {0, 0}}));
  h.ranks_per_node = 0;
  h.leader = "ring";
  h.nodes = {1, 0};  // not numbered in the order of each node's lowest rank
  EXPECT_THROW(expected_traffic("hierarchical", 2, 400, h), BadInput);
  h.nodes = {0, 0, 0};  // not one per rank
  EXPECT_THROW(expected_traffic("hierarchical", 2, 400, h), BadInput);
}

}  // namespace
}  // namespace dtbench
