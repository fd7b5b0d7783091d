// The `dtbench allreduce` driver on the thread transport: size parsing and sweeps, option checks,
// the rows it returns (their traffic included), and the check pattern's power to expose misplaced data.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "reducers/allreduce_bench.hpp"
#include "reducers/pattern.hpp"
#include "reducers/registry.hpp"
#include "reducers/thread_comm.hpp"
#include "reducers/traffic.hpp"

namespace dtbench {
namespace {

TEST(AllreduceBench, ParsesSizesWithSuffixes) {
  EXPECT_EQ(parse_bytes("4096", "-b"), 4096u);
  EXPECT_EQ(parse_bytes("4K", "-b"), 4096u);
  EXPECT_EQ(parse_bytes("64M", "-e"), size_t{64} << 20);
  EXPECT_EQ(parse_bytes("1G", "-e"), size_t{1} << 30);
  EXPECT_EQ(parse_bytes("0", "-b"), 0u);
  for (const char* bad : {"", "K", "4KB", "-4", "4.5M", "x"}) EXPECT_THROW(parse_bytes(bad, "-b"), BadInput) << bad;
}

TEST(AllreduceBench, SizesStopAt2To40InsteadOfWrapping) {
  // 17179869184G is 2^64 bytes: shifted into a size_t it was 0, and the sweep ran on empty buffers.
  try {
    parse_bytes("17179869184G", "-e/--maxbytes");
    FAIL() << "no error";
  } catch (const BadInput& e) {
    EXPECT_STREQ(e.what(), "-e/--maxbytes: '17179869184G' is more than 2^40 bytes (1024G), larger than any one buffer here");
  }
  EXPECT_EQ(parse_bytes("1024G", "-e"), size_t{1} << 40);
  EXPECT_EQ(parse_bytes("1099511627776", "-e"), size_t{1} << 40);
  for (const char* bad : {"1025G", "1048577M", "1099511627777", "99999999999999999999", "000000000000000000002000G"})
    EXPECT_THROW(parse_bytes(bad, "-e"), BadInput) << bad;
  // Decimal digits without a leading 0, as every number on the command line (README "Exit codes"); 0 itself is one.
  for (const char* bad : {"0000000000000000000004K", "064", "00"})
    EXPECT_THROW(parse_bytes(bad, "-b"), BadInput) << bad;
  EXPECT_EQ(parse_bytes("0", "-b"), 0u);
}

TEST(AllreduceBench, SweepSizesFollowTheFactor) {
  EXPECT_EQ(sweep_sizes(4096, 65536, 2), (std::vector<size_t>{4096, 8192, 16384, 32768, 65536}));
  EXPECT_EQ(sweep_sizes(4096, 65535, 4), (std::vector<size_t>{4096, 16384}));
  // Rounded down to whole floats, without repeats.
  EXPECT_EQ(sweep_sizes(1, 9, 1.5), (std::vector<size_t>{0, 4, 8}));
  EXPECT_EQ(sweep_sizes(100, 100, 2), (std::vector<size_t>{100}));
  // A factor just above 1 over a wide range: millions of sizes (a sweep without end), refused naming -f.
  EXPECT_THROW(sweep_sizes(4, 64 << 20, 1.000000001), dtbench::BadInput);
  EXPECT_EQ(sweep_sizes(4, 40000, 1.0000001).size(), 10000u);  // one float per size, 4..40000: the most allowed
}

TEST(AllreduceBench, BadOptionsNameTheFlag) {
  AllreduceOptions o;
  o.reducers = {"ring"};
  o.step_factor = 0;
  try {
    validate(o);
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("-f/--stepfactor must be a finite number > 1"), std::string::npos) << e.what();
  }
  o.step_factor = 2;
  o.min_bytes = 1 << 20;
  o.max_bytes = 4096;
  try {
    validate(o);
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("-b/--minbytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resolve_reducers("ring,nosuch", true), BadInput);
  EXPECT_THROW(resolve_reducers("mpi", false), BadInput);
  EXPECT_EQ(resolve_reducers("all", false).size(), reducer_names().size() - 1);  // no mpi on threads
  EXPECT_EQ(resolve_reducers("all", true), reducer_names());
  // Ranks on several nodes: "all" leaves out shared_memory, which needs one node; named, it stays (and its
  // constructor says why it cannot run).
  const auto several = resolve_reducers("all", true, false);
  EXPECT_EQ(several.size(), reducer_names().size() - 1);
  EXPECT_EQ(std::count(several.begin(), several.end(), "shared_memory"), 0);
  EXPECT_EQ(resolve_reducers("shared_memory", true, false), std::vector<std::string>{"shared_memory"});
  EXPECT_EQ(resolve_reducers("tree,ring", true), (std::vector<std::string>{"tree", "ring"}));
}

// The sweep's result on `ranks` thread ranks, as rank 0 has it.
Json sweep_on_threads(int ranks, const AllreduceOptions& o) {
  Json result;
  run_ranks(ranks, [&](Comm& comm) {
    Json r = run_allreduce_sweep(comm, o, nullptr);
    if (comm.rank() == 0) result = r;
  });
  return result;
}

// -c 0 checks nothing: "wrong" is null in the rows and the total, as the table's N/A, not a 0 that reads as right.
TEST(AllreduceBench, NothingCheckedIsNull) {
  AllreduceOptions o;
  o.min_bytes = o.max_bytes = 64;
  o.iters = 1;
  o.warmup = 0;
  o.check_iters = 0;
  o.reducers = resolve_reducers("ring", false);
  const Json result = sweep_on_threads(2, o);
  EXPECT_TRUE(result["wrong"].is_null());
  ASSERT_EQ(result["rows"].size(), 1u);
  EXPECT_TRUE(result["rows"][0]["wrong"].is_null());
}

TEST(AllreduceBench, SweepRowsOnThreeThreadRanks) {
  AllreduceOptions o;
  o.min_bytes = 4;
  o.max_bytes = 40000;
  o.step_factor = 10;
  o.iters = 2;
  o.warmup = 1;
  o.check_iters = 2;
  o.reducers = resolve_reducers("all", false);
  const Json result = sweep_on_threads(3, o);
  EXPECT_EQ(result["ranks"], 3);
  EXPECT_EQ(result["wrong"], 0);
  const auto sizes = sweep_sizes(o.min_bytes, o.max_bytes, o.step_factor);
  ASSERT_EQ(result["rows"].size(), sizes.size() * o.reducers.size());
  for (const Json& row : result["rows"]) {
    EXPECT_EQ(row["count"].get<size_t>() * 4, row["bytes"].get<size_t>());
    EXPECT_GT(row["time_us"].get<double>(), 0);
    // busbw = algbw x 2(n-1)/n with n = 3 (nccl-tests).
    EXPECT_NEAR(row["busbw_gbps"].get<double>(), row["algbw_gbps"].get<double>() * 4.0 / 3.0, 1e-12);
    EXPECT_NEAR(row["algbw_gbps"].get<double>(),
                row["bytes"].get<double>() / (row["time_us"].get<double>() * 1e-6) / 1e9, 1e-9);
    // One call's traffic per rank, as counted, equals the reducer's formula (none of these is mpi); a
    // reducer without one (shared_memory) moves its bytes outside the Comm, which counts nothing.
    const Json& t = row["traffic"];
    ASSERT_EQ(t["sent_bytes"].size(), 3u);
    if (reducer_info(row["reducer"].get<std::string>()).traffic == nullptr) {
      for (size_t r = 0; r < 3; ++r) {
        EXPECT_EQ(t["sent_bytes"][r].get<uint64_t>(), 0u) << row.dump();
        EXPECT_EQ(t["sent_messages"][r].get<uint64_t>(), 0u) << row.dump();
      }
      EXPECT_TRUE(t["expected_sent_bytes"].is_null()) << row.dump();
      continue;
    }
    const auto want = expected_traffic(row["reducer"], 3, row["bytes"], o.reducer_options);
    ASSERT_EQ(t["sent_bytes"].size(), 3u);
    for (size_t r = 0; r < 3; ++r) {
      EXPECT_EQ(t["sent_bytes"][r].get<uint64_t>(), want[r].sent) << row.dump();
      EXPECT_EQ(t["received_bytes"][r].get<uint64_t>(), want[r].received) << row.dump();
      EXPECT_EQ(t["expected_sent_bytes"][r].get<uint64_t>(), want[r].sent) << row.dump();
      EXPECT_EQ(t["expected_received_bytes"][r].get<uint64_t>(), want[r].received) << row.dump();
      EXPECT_EQ(t["sent_messages"][r].get<uint64_t>() > 0, row["bytes"].get<size_t>() > 0) << row.dump();
    }
  }
  EXPECT_EQ(result["reduction"].size(), sizes.size());
}

TEST(CheckPattern, WrongPlacementIsVisible) {
  const int p = 4;
  const size_t n = 1000;
  CheckPattern pat(p);
  EXPECT_GT(pat.period(), n);  // a period above the size: every index distinct
  auto sum_over = [&](const std::vector<int>& ranks) {
    std::vector<float> s(n, 0.0f);
    for (int r : ranks)
      for (size_t i = 0; i < n; ++i) s[i] += pat.value(r, i);
    return s;
  };
  std::vector<float> good = sum_over({0, 1, 2, 3});
  EXPECT_EQ(pat.count_wrong(good.data(), n), 0u);
  EXPECT_EQ(pat.count_wrong(sum_over({0, 1, 2}).data(), n), n);     // a rank left out
  EXPECT_EQ(pat.count_wrong(sum_over({0, 1, 2, 3, 3}).data(), n), n);  // a rank counted twice
  std::vector<float> shifted = good;  // two blocks swapped
  std::swap_ranges(shifted.begin(), shifted.begin() + 250, shifted.begin() + 250);
  EXPECT_EQ(pat.count_wrong(shifted.data(), n), 500u);
  // Errors whose totals cancel: ranks 1 and 2 twice, ranks 0 and 3 left out. 2 + 2 + 3 + 3 = 1 + 2 + 3 + 4, so a
  // pattern of (r + 1) * f(i) summed to the expected values at every index. The residues of ranks 0 and 3 sum like
  // those of 1 and 2 only by coincidence, at about one index in P (here: none of the 1000).
  EXPECT_EQ(pat.count_wrong(sum_over({1, 1, 2, 2}).data(), n), n);
  EXPECT_EQ(pat.count_wrong(sum_over({0, 0, 3, 3}).data(), n), n);
  // One chunk of rank 3 where rank 0's was due, and one of rank 0 where rank 3's was (the same total).
  std::vector<float> crossed = good;
  for (size_t i = 0; i < 100; ++i) crossed[i] += pat.value(3, i) - pat.value(0, i);
  for (size_t i = 100; i < 200; ++i) crossed[i] += pat.value(0, i) - pat.value(3, i);
  EXPECT_EQ(pat.count_wrong(crossed.data(), n), 200u);
}

// Every partial sum is exact in float32: each value lies in 1..P and K * P <= 2^24, so any sum of the K ranks'
// values in any order is an integer at most 2^24. fill() writes what value() says.
TEST(CheckPattern, EveryPartialSumIsExact) {
  for (int ranks : {1, 2, 3, 4, 7, 16, 64, 1000, 2700}) {
    const CheckPattern pat(ranks);
    EXPECT_LE(static_cast<double>(pat.period()) * ranks, 16777216.0) << ranks;
    EXPECT_GE(pat.period(), 2u) << ranks;
    const size_t n = pat.period() + 5;  // past one period: the sequence repeats
    std::vector<float> buf(n);
    double max_expected = 0;
    for (int r : {0, ranks / 2, ranks - 1}) {
      pat.fill(r, buf.data(), n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(buf[i], pat.value(r, i)) << ranks << " " << r << " " << i;
        ASSERT_GE(buf[i], 1.0f);
        ASSERT_LE(buf[i], static_cast<float>(pat.period()));
      }
    }
    for (size_t i = 0; i < n; ++i) max_expected = std::max(max_expected, static_cast<double>(pat.expected(i)));
    EXPECT_LE(max_expected, 16777216.0) << ranks;
    // Distinct multipliers, no two summing to P (value(r, 1) - value(r, 0) is m_r mod P), while ranks <= (P - 1) / 2.
    if (static_cast<size_t>(ranks) <= (pat.period() - 1) / 2) {
      const int64_t P = static_cast<int64_t>(pat.period());
      std::vector<bool> seen(pat.period(), false);
      for (int r = 0; r < ranks; ++r) {
        const int64_t m = ((static_cast<int64_t>(pat.value(r, 1)) - static_cast<int64_t>(pat.value(r, 0))) % P + P) % P;
        ASSERT_NE(m, 0) << ranks << " " << r;
        ASSERT_FALSE(seen[static_cast<size_t>(m)]) << ranks << " rank " << r << ": a multiplier taken before";
        seen[static_cast<size_t>(m)] = seen[static_cast<size_t>(P - m)] = true;
      }
    }
    // The expected value is the sum of the ranks' values, computed here in double.
    for (size_t i : {size_t{0}, size_t{1}, pat.period() - 1, pat.period(), n - 1}) {
      double sum = 0;
      for (int r = 0; r < ranks; ++r) sum += pat.value(r, i);
      ASSERT_EQ(static_cast<double>(pat.expected(i)), sum) << ranks << " " << i;
    }
  }
}

}  // namespace
}  // namespace dtbench
