// Every reducer x ranks 1..16 x sizes {0, 1, 3, 4, 100, 1000, 10007, 1<<20} on the thread transport:
// exact expected sums (reducers/pattern.hpp: integer inputs whose partial sums are exact in float32,
// so the reference is the pattern's table of the sums and the tolerance is zero) and bitwise identical
// buffers on all ranks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "reducers/pattern.hpp"
#include "reducers/reducer.hpp"
#include "reducers/registry.hpp"
#include "reducers/sub_comm.hpp"
#include "reducers/thread_comm.hpp"
#include "tests/reducers/reducer_cases.hpp"

namespace dtbench {
namespace {

using test::ReducerCase;

struct Param {
  ReducerCase rc;
  int ranks;
};

std::string param_name(const testing::TestParamInfo<Param>& info) {
  return info.param.rc.label + "_" + std::to_string(info.param.ranks) + "ranks";
}

std::vector<Param> all_params() {
  std::vector<Param> out;
  for (const auto& rc : test::reducer_cases(false))
    for (int n = 1; n <= 16; ++n) out.push_back({rc, n});
  return out;
}

class ReducerSweep : public testing::TestWithParam<Param> {};

// One pattern per rank count for the whole sweep (its table takes up to 2^24 steps to build; built per size, it cost
// the sweep seconds).
const CheckPattern& pattern_for(int ranks) {
  static std::mutex m;
  static std::map<int, std::unique_ptr<CheckPattern>> patterns;
  std::lock_guard<std::mutex> lock(m);
  auto& p = patterns[ranks];
  if (!p) p = std::make_unique<CheckPattern>(ranks);
  return *p;
}

// Runs one size on all ranks and returns every rank's result buffer.
std::vector<std::vector<float>> reduce_on_threads(const Param& p, size_t count, bool async) {
  std::vector<std::vector<float>> result(static_cast<size_t>(p.ranks));
  const CheckPattern& pattern = pattern_for(p.ranks);
  run_ranks(p.ranks, [&](Comm& comm) {
    auto reducer = make_reducer(p.rc.name, comm, p.rc.for_ranks(p.ranks));
    std::vector<float>& buf = result[static_cast<size_t>(comm.rank())];
    buf.resize(count);
    pattern.fill(comm.rank(), buf.data(), count);
    if (async) {
      reducer->start(buf.data(), count);
      reducer->wait();
    } else {
      reducer->allreduce(buf.data(), count);
    }
  });
  return result;
}

void expect_exact_and_identical(const Param& p, size_t count, const std::vector<std::vector<float>>& result) {
  const CheckPattern& pattern = pattern_for(p.ranks);
  for (int r = 0; r < p.ranks; ++r) {
    const auto& buf = result[static_cast<size_t>(r)];
    ASSERT_EQ(buf.size(), count);
    size_t wrong = pattern.count_wrong(buf.data(), count);
    if (wrong > 0) {
      size_t first = 0;
      while (buf[first] == pattern.expected(first)) ++first;
      FAIL() << p.rc.label << " ranks=" << p.ranks << " count=" << count << " rank " << r << ": " << wrong
             << " wrong elements, first at " << first << ": " << buf[first] << " != " << pattern.expected(first);
    }
    if (r > 0 && count > 0) {
      EXPECT_EQ(0, std::memcmp(buf.data(), result[0].data(), count * sizeof(float)))
          << "rank " << r << " differs from rank 0 in bits";
    }
  }
}

TEST_P(ReducerSweep, ExactSumIdenticalOnAllRanks) {
  const Param& p = GetParam();
  for (size_t count : test::check_counts()) {
    if (count > p.rc.max_count) continue;
    SCOPED_TRACE("count=" + std::to_string(count));
    expect_exact_and_identical(p, count, reduce_on_threads(p, count, false));
  }
}

TEST_P(ReducerSweep, AsyncStartWaitGivesTheSameResult) {
  const Param& p = GetParam();
  for (size_t count : {size_t{0}, size_t{3}, size_t{10007}}) {
    if (count > p.rc.max_count) continue;
    SCOPED_TRACE("count=" + std::to_string(count));
    expect_exact_and_identical(p, count, reduce_on_threads(p, count, true));
  }
}

// Inputs that are not exact in float32 (normal random values): the order of summation shows in the
// last bits, so identical bits on all ranks and across two runs test the fixed order itself.
TEST_P(ReducerSweep, FixedOrderOnInexactInputs) {
  const Param& p = GetParam();
  const size_t count = std::min<size_t>(4099, p.rc.max_count);
  auto once = [&] {
    std::vector<std::vector<float>> result(static_cast<size_t>(p.ranks));
    run_ranks(p.ranks, [&](Comm& comm) {
      auto reducer = make_reducer(p.rc.name, comm, p.rc.for_ranks(p.ranks));
      auto& buf = result[static_cast<size_t>(comm.rank())];
      Rng rng(7, {static_cast<uint64_t>(comm.rank())});
      buf.resize(count);
      for (auto& x : buf) x = static_cast<float>(rng.normal());
      reducer->allreduce(buf.data(), count);
    });
    return result;
  };
  auto a = once(), b = once();
  for (int r = 0; r < p.ranks; ++r) {
    EXPECT_EQ(0, std::memcmp(a[r].data(), a[0].data(), count * sizeof(float))) << "rank " << r << " vs rank 0";
    EXPECT_EQ(0, std::memcmp(a[r].data(), b[r].data(), count * sizeof(float))) << "rank " << r << " run 1 vs 2";
  }
  // And the sums are right to float32 accuracy: |error| <= (p-1) * eps * sum|x| (each of the p-1
  // additions rounds once; Higham, Accuracy and Stability, eq. 4.3), against a double reference.
  std::vector<double> ref(count, 0.0), mag(count, 0.0);
  for (int r = 0; r < p.ranks; ++r) {
    Rng rng(7, {static_cast<uint64_t>(r)});
    for (size_t i = 0; i < count; ++i) {
      float x = static_cast<float>(rng.normal());
      ref[i] += x;
      mag[i] += std::abs(x);
    }
  }
  const double eps = 0x1.0p-24;
  for (size_t i = 0; i < count; ++i)
    ASSERT_LE(std::abs(a[0][i] - ref[i]), (p.ranks - 1) * eps * mag[i] * 1.0001 + 1e-30) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(Thread, ReducerSweep, testing::ValuesIn(all_params()), param_name);

// ---- bus factors and the factory ----------------------------------------------------------------------

TEST(ReducerFactory, BusFactorIsTheNcclTestsAllreduceFactor) {
  // nccl-tests doc/PERFORMANCE.md: busbw = algbw * 2(n-1)/n for allreduce.
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(16), 30.0 / 16.0);
  run_ranks(3, [](Comm& comm) {
    for (const auto& name : reducer_names()) {
      if (name == "mpi") continue;
      auto r = make_reducer(name, comm);
      EXPECT_EQ(r->name(), name);
      EXPECT_DOUBLE_EQ(r->bus_factor(3), 4.0 / 3.0) << name;
    }
  });
}

TEST(ReducerFactory, UnknownNameListsTheValidOnes) {
  // async_parameter_server is the trainer's own loop, not an allreduce: make_reducer refuses it alike.
  run_ranks(1, [](Comm& comm) {
    for (const std::string bad : {"allgather", "async_parameter_server"}) {
      try {
        make_reducer(bad, comm);
        FAIL() << "no error";
      } catch (const BadInput& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("unknown reducer '" + bad + "'"), std::string::npos) << m;
        for (const auto& name : reducer_names()) EXPECT_NE(m.find(name), std::string::npos) << m;
      }
    }
  });
}

TEST(ReducerRegistry, ListsEveryConfigNameOnceAndTheHostOnesAsReducerNames) {
  std::vector<std::string> all, host;
  for (const auto& r : reducer_registry()) {
    all.push_back(r.name);
    if (r.kind == ReducerKind::kHost) host.push_back(r.name);
    EXPECT_EQ(find_reducer(r.name), &r);
    EXPECT_DOUBLE_EQ(r.bus_factor(3), 4.0 / 3.0) << r.name;
  }
  EXPECT_EQ(all, (std::vector<std::string>{"parameter_server", "tree", "butterfly", "ring", "halving_doubling", "hierarchical",
                                           "shared_memory", "mpi", "nccl", "async_parameter_server"}));
  EXPECT_EQ(host, reducer_names());
  EXPECT_EQ(find_reducer("allgather"), nullptr);
  EXPECT_EQ(find_reducer("nccl")->kind, ReducerKind::kGpuOnly);
  EXPECT_EQ(find_reducer("async_parameter_server")->kind, ReducerKind::kAsynchronous);
}

TEST(ReducerFactory, MpiNeedsTheMpiTransportAndServersMustFit) {
  run_ranks(2, [](Comm& comm) {
    EXPECT_THROW(make_reducer("mpi", comm), BadInput);
    ReducerOptions o;
    o.servers = 3;
    EXPECT_THROW(make_reducer("parameter_server", comm, o), BadInput);
    o.servers = 0;
    EXPECT_THROW(make_reducer("parameter_server", comm, o), BadInput);
    ReducerOptions z;
    z.segment_bytes = 0;
    EXPECT_THROW(make_reducer("ring", comm, z), BadInput);
  });
}

TEST(ReducerFactory, HierarchicalRefusesLeadersThatCannotRunOnASubsetOfTheRanks) {
  run_ranks(2, [](Comm& comm) {
    ReducerOptions o;
    // mpi: MPI_Allreduce among the leaders needs the MPI transport, not these threads.
    for (const char* leader : {"mpi", "nccl", "hierarchical", "shared_memory", "async_parameter_server", "nosuch"}) {
      o.leader = leader;
      try {
        make_reducer("hierarchical", comm, o);
        ADD_FAILURE() << leader << ": no BadInput";
      } catch (const BadInput& e) {
        const std::string why = e.what();
        if (o.leader == "mpi")
          EXPECT_NE(why.find("needs the MPI transport"), std::string::npos) << why;
        else
          EXPECT_NE(why.find("cannot run among the node leaders"), std::string::npos) << why;
      }
    }
    o.leader = "tree";
    o.ranks_per_node = -1;
    EXPECT_THROW(make_reducer("hierarchical", comm, o), BadInput);
  });
}

// A SubComm of ranks {1, 3, 4} of 5: an algorithm on it sums those ranks' buffers only, its transfers are
// counted by the parent too, its barrier returns, and its nodes are renumbered from the parent's.
TEST(SubComm, AnAlgorithmOnSomeRanksSumsThoseRanksOnly) {
  const std::vector<int> members = {1, 3, 4};
  run_ranks(5, [&](Comm& comm) {
    if (std::find(members.begin(), members.end(), comm.rank()) == members.end()) {
      EXPECT_THROW(SubComm(comm, members), RunFailed);
      return;
    }
    SubComm sub(comm, members);
    EXPECT_EQ(sub.size(), 3);
    EXPECT_EQ(members[static_cast<size_t>(sub.rank())], comm.rank());
    EXPECT_EQ(sub.nodes(), (std::vector<int>{0, 0, 0}));
    auto ring = make_allreduce("ring", sub);
    std::vector<float> buf(10, static_cast<float>(comm.rank()));
    comm.reset_traffic();
    ring->run(buf.data(), buf.size());
    for (float x : buf) EXPECT_EQ(x, 1.0f + 3.0f + 4.0f);
    EXPECT_EQ(comm.traffic(), sub.traffic());  // every byte went through the parent's counting transfers
    EXPECT_GT(sub.traffic().sent_bytes, 0u);
    sub.barrier();
  });
  EXPECT_THROW(run_ranks(2, [](Comm& comm) { SubComm(comm, {1, 0}); }), RunFailed);  // not ascending
}

// A SubComm's recv_any gives the sender's member index, and a message from a rank that is not a member is an error
// that names it (not a message silently taken from another group).
TEST(SubComm, RecvAnyNamesTheMemberAndRefusesANonMember) {
  run_ranks(4, [](Comm& comm) {
    if (comm.rank() == 2) return;
    SubComm sub(comm, {0, 1, 3});
    if (sub.rank() != 0) {
      const int v = comm.rank();
      sub.send(0, &v, sizeof v, 5);
      return;
    }
    int seen = 0;
    for (int m = 0; m < 2; ++m) {
      int v = -1;
      const int member = sub.recv_any(&v, sizeof v, 5);
      EXPECT_EQ(v, member == 1 ? 1 : 3);  // member 1 is rank 1, member 2 is rank 3
      seen |= 1 << member;
    }
    EXPECT_EQ(seen, 0b110);
    EXPECT_EQ(sub.traffic().received_bytes, 2 * sizeof(int));
  });
  try {
    run_ranks(3, [](Comm& comm) {
      if (comm.rank() == 1) {
        const int v = 1;
        comm.send(0, &v, sizeof v, 5);
      } else if (comm.rank() == 0) {
        SubComm sub(comm, {0, 2});
        int v = 0;
        sub.recv_any(&v, sizeof v, 5);
      }
    });
    FAIL() << "a non-member's message was taken";
  } catch (const RunFailed& e) {
    EXPECT_NE(std::string(e.what()).find("from rank 1 of the parent, which is not a member"), std::string::npos)
        << e.what();
  }
}

// A SubComm's exchange reaches the members' parent ranks (forwarded as one exchange of the parent's) and is counted
// by both.
TEST(SubComm, ExchangeGoesToTheMembersParentRanksAndCountsInBoth) {
  const std::vector<int> members = {0, 2, 3};
  run_ranks(4, [&](Comm& comm) {
    if (comm.rank() == 1) return;
    SubComm sub(comm, members);
    const int me = sub.rank();
    std::vector<int> out(3), in(3, -1);
    std::vector<SendPiece> sends;
    std::vector<RecvPiece> recvs;
    for (int p = 0; p < 3; ++p) {
      if (p == me) continue;
      out[size_t(p)] = 10 * comm.rank() + members[size_t(p)];
      sends.push_back({p, &out[size_t(p)], sizeof(int), 4});
      recvs.push_back({p, &in[size_t(p)], sizeof(int), 4});
    }
    comm.reset_traffic();
    sub.exchange(sends, recvs);
    for (int p = 0; p < 3; ++p) {
      if (p != me) {
        EXPECT_EQ(in[size_t(p)], 10 * members[size_t(p)] + comm.rank()) << "member " << me << " from " << p;
      }
    }
    EXPECT_EQ(sub.traffic(), comm.traffic());
    EXPECT_EQ(sub.traffic().received_messages, 2u);
  });
  // The view of all ranks: the parent's ranks, its own counters.
  run_ranks(3, [](Comm& comm) {
    SubComm all(comm);
    EXPECT_EQ(all.size(), 3);
    EXPECT_EQ(all.rank(), comm.rank());
    const int v = comm.rank();
    int got = -1;
    all.sendrecv((comm.rank() + 1) % 3, &v, sizeof v, (comm.rank() + 2) % 3, &got, sizeof got, 6);
    EXPECT_EQ(got, (comm.rank() + 2) % 3);
    EXPECT_EQ(all.traffic().sent_bytes, sizeof(int));
  });
}

// A SubComm's isend reaches the member's parent rank and is counted by both when waited for.
TEST(SubComm, IsendGoesToTheMembersParentRankAndCountsInBoth) {
  run_ranks(3, [](Comm& comm) {
    if (comm.rank() == 1) return;
    SubComm sub(comm, {0, 2});
    const int mine = 100 + comm.rank(), other = 1 - sub.rank();
    SendRequest r = sub.isend(other, &mine, sizeof mine, 9);
    int got = 0;
    sub.recv(other, &got, sizeof got, 9);
    sub.wait(r);
    EXPECT_EQ(got, comm.rank() == 0 ? 102 : 100);
    EXPECT_EQ(sub.traffic().sent_bytes, sizeof(int));
    EXPECT_EQ(comm.traffic(), sub.traffic());
  });
}


// ---- shared_memory: what only it can get wrong -------------------------------------------------------

// Another Comm's ranks, placed on the nodes given (the thread transport puts every rank on node 0).
class PlacedComm : public Comm {
 public:
  PlacedComm(Comm& inner, std::vector<int> nodes) : inner_(inner), nodes_(std::move(nodes)) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void barrier() override { inner_.barrier(); }
  [[noreturn]] void abort(const std::string& reason) override {
    inner_.abort(reason);
    std::terminate();  // not reached: Comm::abort never returns
  }
  std::string transport() const override { return inner_.transport(); }
  std::vector<int> nodes() const override { return nodes_; }

 private:
  void do_send(int dst, const void* buf, size_t bytes, int tag) override { inner_.send(dst, buf, bytes, tag); }
  void do_recv(int src, void* buf, size_t bytes, int tag) override { inner_.recv(src, buf, bytes, tag); }
  int do_recv_any(void* buf, size_t bytes, int tag) override { return inner_.recv_any(buf, bytes, tag); }
  void do_sendrecv(int dst, const void* sb, size_t sn, int src, void* rb, size_t rn, int tag) override {
    inner_.sendrecv(dst, sb, sn, src, rb, rn, tag);
  }
  std::unique_ptr<SendRequest::Pending> do_isend(int dst, const void* buf, size_t bytes, int tag) override {
    return forwarded(inner_, inner_.isend(dst, buf, bytes, tag));
  }
  Comm& inner_;
  std::vector<int> nodes_;
};

TEST(SharedMemory, RefusesRanksOnSeveralNodesNamingThem) {
  try {
    run_ranks(3, [](Comm& comm) {
      PlacedComm placed(comm, {0, 0, 1});
      make_reducer("shared_memory", placed);
    });
    FAIL() << "no error";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("rank 2 on node 1"), std::string::npos) << e.what();
  }
}

// This process's shared-memory objects in /dev/shm (SharedMemory names them /dtbench-<pid>-...).
int ours_in_dev_shm() {
  const std::string prefix = "dtbench-" + std::to_string(getpid()) + "-";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm"))
    n += e.path().filename().string().rfind(prefix, 0) == 0;
  return n;
}

// The segment is unlinked once every rank has mapped it: nothing of this process stays in /dev/shm.
TEST(SharedMemory, LeavesNothingInDevShm) {
  run_ranks(4, [&](Comm& comm) {
    auto r = make_reducer("shared_memory", comm);
    comm.barrier();
    if (comm.rank() == 0) {
      EXPECT_EQ(ours_in_dev_shm(), 0);
    }
    std::vector<float> buf(5000, 1.0f);
    r->allreduce(buf.data(), buf.size());
    for (float x : buf) ASSERT_EQ(x, 4.0f);
  });
  EXPECT_EQ(ours_in_dev_shm(), 0);
}

// Every rank must take the same path in every round: ranks built with other chunk sizes all stop, with the
// reason; and a rank that fails before it joins the setup leaves nothing in /dev/shm behind either.
TEST(SharedMemory, RanksWithOtherOptionsOrAFailedPeerStopTheSetupCleanly) {
  try {
    run_ranks(3, [](Comm& comm) {
      ReducerOptions o;
      if (comm.rank() == 2) o.segment_bytes = 4096;
      make_reducer("shared_memory", comm, o);
    });
    FAIL() << "no error";
  } catch (const RunFailed& e) {
    EXPECT_NE(std::string(e.what()).find("options differ from rank 0's"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_ranks(3,
                         [](Comm& comm) {
                           if (comm.rank() == 1) throw RunFailed("rank 1 failed before its setup");
                           make_reducer("shared_memory", comm);
                         }),
               RunFailed);
  EXPECT_EQ(ours_in_dev_shm(), 0);
}

// A rank that fails before its allreduce: the others, waiting on its counters, stop with the abort
// instead of spinning for ever, and the failing rank's error is the one reported.
TEST(SharedMemory, APeerThatFailsDoesNotHangTheOthers) {
  for (int ranks : {2, 5}) {
    try {
      run_ranks(ranks, [](Comm& comm) {
        auto r = make_reducer("shared_memory", comm);
        if (comm.rank() == 1) throw RunFailed("rank 1 failed on purpose");
        std::vector<float> buf(100000, 1.0f);
        r->allreduce(buf.data(), buf.size());
      });
      FAIL() << "no error";
    } catch (const RunFailed& e) {
      EXPECT_NE(std::string(e.what()).find("on purpose"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dtbench
