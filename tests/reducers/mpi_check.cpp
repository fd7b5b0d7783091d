// The thread-transport checks again, under mpiexec: every reducer (and MPI_Allreduce) x the issue's
// sizes, exact expected sums, identical bits on all ranks (compared through a hash of each rank's
// buffer), the asynchronous interface, repeatable bits on inexact inputs, and the traffic: MpiComm
// counts, on every rank, the same bytes and messages as the thread transport for the same reducer and
// size, and the bytes of the reducer's formula (reducers/traffic.hpp); MpiComm's non-blocking sends, and what a
// failed transfer leaves posted.
// CTest runs it with 1..5 ranks.
// Prints failures on rank 0 and exits 1 when any check failed on any rank.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "reducers/mpi_comm.hpp"
#include "reducers/pattern.hpp"
#include "reducers/reducer.hpp"
#include "reducers/registry.hpp"
#include "reducers/thread_comm.hpp"
#include "reducers/traffic.hpp"
#include "tests/reducers/reducer_cases.hpp"

namespace dtbench {
namespace {

uint64_t fnv1a(const float* data, size_t count) {
  uint64_t h = 1469598103934665603ULL;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(data);
  for (size_t i = 0; i < count * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

struct Checker {
  MPI_Comm world = MPI_COMM_WORLD;
  int rank = 0, size = 1;
  long failures = 0;

  // Collective: true on every rank when all ranks hold the same hash.
  bool same_everywhere(uint64_t h) {
    uint64_t lo = h, hi = h;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, world);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, world);
    return lo == hi;
  }
  long sum(long x) {
    MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_LONG, MPI_SUM, world);
    return x;
  }
  void expect(bool ok, const std::string& what) {
    if (!ok) {
      ++failures;
      if (rank == 0) std::printf("FAIL %s\n", what.c_str());
    }
  }
};

std::string show(const CommTraffic& t) {
  return "sent " + std::to_string(t.sent_bytes) + " B in " + std::to_string(t.sent_messages) + ", received " +
         std::to_string(t.received_bytes) + " B in " + std::to_string(t.received_messages);
}

// One allreduce per reducer and size, counted by MpiComm on every rank; rank 0 runs the same on thread
// ranks where the case runs there and compares rank by rank (bytes and messages), and both with the formula's
// bytes.
void check_traffic(MpiComm& comm, Checker& ck) {
  for (const auto& rc : test::reducer_cases(true)) {
    if (rc.name == "mpi") continue;  // MPI_Allreduce's bytes move inside the library: nothing to count
    // MPI_Allreduce among the hierarchical reducer's leaders has no thread twin: MpiComm's counts are checked
    // against the formula alone (the transfers within the nodes; the leaders' bytes move inside MPI, uncounted).
    const bool twin = rc.options.leader != "mpi";
    const ReducerOptions o = rc.for_ranks(ck.size);
    auto reducer = make_reducer(rc.name, comm, o);
    for (size_t count : {size_t{7}, size_t{1001}, size_t{10007}}) {
      if (count > rc.max_count) continue;
      std::vector<float> buf(count, 1.0f);
      comm.reset_traffic();
      reducer->allreduce(buf.data(), count);
      const CommTraffic mine = comm.traffic();
      std::vector<CommTraffic> mpi(static_cast<size_t>(ck.size));
      MPI_Gather(&mine, sizeof mine, MPI_BYTE, mpi.data(), sizeof mine, MPI_BYTE, 0, ck.world);
      if (ck.rank != 0) continue;
      std::vector<CommTraffic> threads(static_cast<size_t>(ck.size));
      if (twin) {
        run_ranks(ck.size, [&](Comm& c) {
          auto r = make_reducer(rc.name, c, o);
          std::vector<float> b(count, 1.0f);
          c.reset_traffic();  // as on MpiComm: the allreduce's bytes, not the reducer's setup
          r->allreduce(b.data(), count);
          threads[static_cast<size_t>(c.rank())] = c.traffic();
        });
      }
      // No formula: the bytes move outside the Comm (shared_memory), which must count nothing.
      const bool outside = reducer_info(rc.name).traffic == nullptr;
      const auto formula = outside ? std::vector<RankBytes>(mpi.size()) : expected_traffic(rc.name, ck.size, count * sizeof(float), o);
      for (size_t r = 0; r < mpi.size(); ++r) {
        const std::string what = rc.label + " ranks=" + std::to_string(ck.size) + " count=" +
                                 std::to_string(count) + " rank " + std::to_string(r) + " traffic: ";
        if (twin) ck.expect(mpi[r] == threads[r], what + "mpi " + show(mpi[r]) + " != thread " + show(threads[r]));
        if (outside) ck.expect(mpi[r] == CommTraffic{}, what + "mpi " + show(mpi[r]) + ", expected nothing");
        ck.expect(mpi[r].sent_bytes == formula[r].sent && mpi[r].received_bytes == formula[r].received,
                  what + "mpi " + show(mpi[r]) + " != formula sent " + std::to_string(formula[r].sent) +
                      " received " + std::to_string(formula[r].received));
      }
    }
  }
}

// Non-blocking sends (what a pipeline stage sends its neighbour): every rank posts three messages of
// different sizes to the next rank before it receives the previous rank's, in order on one tag, then waits;
// the contents arrive, and the counters hold the bytes once the sends are waited for, not before.
void check_isend(MpiComm& comm, Checker& ck) {
  const int right = (ck.rank + 1) % ck.size, left = (ck.rank + ck.size - 1) % ck.size;
  const size_t sizes[3] = {1, 1000, 300000};
  std::vector<std::vector<float>> out, in;
  for (size_t n : sizes) {
    out.emplace_back(n, static_cast<float>(ck.rank * 10) + static_cast<float>(out.size()));
    in.emplace_back(n, -1.0f);
  }
  comm.reset_traffic();
  SendRequest req[3];
  for (int k = 0; k < 3; ++k) req[k] = comm.isend(right, out[size_t(k)].data(), sizes[k] * sizeof(float), 21);
  const uint64_t before_wait = comm.traffic().sent_bytes;
  for (int k = 0; k < 3; ++k) comm.recv(left, in[size_t(k)].data(), sizes[k] * sizeof(float), 21);
  for (auto& r : req) comm.wait(r);
  size_t wrong = 0;
  for (int k = 0; k < 3; ++k)
    for (float v : in[size_t(k)]) wrong += v != static_cast<float>(left * 10 + k);
  const std::string what = "isend ranks=" + std::to_string(ck.size) + " rank " + std::to_string(ck.rank);
  ck.expect(ck.sum(static_cast<long>(wrong)) == 0, what + ": wrong values received");
  const uint64_t bytes = (sizes[0] + sizes[1] + sizes[2]) * sizeof(float);
  const CommTraffic t = comm.traffic();
  ck.expect(before_wait == 0 && t.sent_bytes == bytes && t.received_bytes == bytes && t.sent_messages == 3 &&
                t.received_messages == 3,
            what + ": " + show(t) + " (before the waits: " + std::to_string(before_wait) + " B)");
}

// A transfer that throws leaves nothing posted behind (MpiComm::Unfinished in mpi_comm.cpp). Each rank's exchange
// receives from its left neighbour and from a rank that does not exist, so the second post fails after the first
// was posted: the left neighbour's next message with that tag must then wait for the next receive, not be taken
// by the failed exchange's receive (into `stray`, which outlives the checks for that reason). And a failed
// exchange's sends posted before the failure are left to finish: the right neighbour still receives them. (The
// failed post relies on MPI's argument checks, on in Open MPI unless mpi_param_check is turned off.)
void check_failed_transfer(MpiComm& comm, Checker& ck) {
  if (ck.size < 2) return;
  const int right = (ck.rank + 1) % ck.size, left = (ck.rank + ck.size - 1) % ck.size, nowhere = ck.size + 7;
  const std::string what = "failed exchange ranks=" + std::to_string(ck.size) + " rank " + std::to_string(ck.rank);
  static int32_t stray = -1, never = -1;
  static const int32_t sent_first = 2000;
  int threw = 0;
  try {
    const RecvPiece r[2] = {{left, &stray, sizeof stray, 41}, {nowhere, &never, sizeof never, 41}};
    comm.exchange({}, r);
  } catch (const RunFailed&) {
    ++threw;
  }
  try {
    const SendPiece s[2] = {{right, &sent_first, sizeof sent_first, 42}, {nowhere, &sent_first, sizeof sent_first, 42}};
    comm.exchange(s, {});
  } catch (const RunFailed&) {
    ++threw;
  }
  ck.expect(ck.sum(threw == 2 ? 0 : 1) == 0, what + ": a transfer naming a rank that does not exist did not throw");
  static int32_t value;  // static: outlives a send left unwaited below
  value = 1000 + ck.rank;
  SendRequest next = comm.isend(right, &value, sizeof value, 41);  // waited for after the receive below
  int found = 0;  // up to 10 s for the left neighbour's message to be there for the next receive
  for (int i = 0; i < 10000 && !found; ++i) {
    MPI_Iprobe(left, 41, comm.handle(), &found, MPI_STATUS_IGNORE);
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int32_t got = -1, first = -1;
  if (found) comm.recv(left, &got, sizeof got, 41);
  if (found) comm.wait(next);  // else a stray receive took the messages: nothing to wait for
  ck.expect(ck.sum(found && got == 1000 + left ? 0 : 1) == 0,
            what + ": the next message was " + (found ? "received as " + std::to_string(got) : "taken") +
                " (the failed receive's buffer holds " + std::to_string(stray) + ")");
  comm.recv(left, &first, sizeof first, 42);
  ck.expect(ck.sum(first == sent_first ? 0 : 1) == 0, what + ": the send posted before the failure delivered " +
                                                          std::to_string(first));
}

int run(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  MpiComm comm;
  // --poll-us N: the same checks with MPI waits that test and sleep (reducer.poll_us) instead of blocking.
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--poll-us") comm.set_poll_sleep_us(std::stoi(argv[i + 1]));
  Checker ck;
  ck.rank = comm.rank();
  ck.size = comm.size();
  CheckPattern pattern(ck.size);

  for (const auto& rc : test::reducer_cases(true)) {
    auto reducer = make_reducer(rc.name, comm, rc.for_ranks(ck.size));
    for (size_t count : test::check_counts()) {
      if (count > rc.max_count) continue;
      for (bool async : {false, true}) {
        if (async && count > 10007) continue;
        std::vector<float> buf(count);
        pattern.fill(ck.rank, buf.data(), count);
        if (async) {
          reducer->start(buf.data(), count);
          reducer->wait();
        } else {
          reducer->allreduce(buf.data(), count);
        }
        std::string what = rc.label + " ranks=" + std::to_string(ck.size) + " count=" + std::to_string(count) +
                           (async ? " async" : "");
        long wrong = ck.sum(static_cast<long>(pattern.count_wrong(buf.data(), count)));
        ck.expect(wrong == 0, what + ": " + std::to_string(wrong) + " wrong elements");
        ck.expect(ck.same_everywhere(fnv1a(buf.data(), count)), what + ": ranks differ in bits");
      }
    }
    // Inexact inputs: the fixed order must give identical bits on all ranks and on a second run.
    const size_t count = std::min<size_t>(4099, rc.max_count);
    std::vector<float> a(count), b(count);
    Rng rng(11, {static_cast<uint64_t>(ck.rank)});
    for (auto& x : a) x = static_cast<float>(rng.normal());
    b = a;
    reducer->allreduce(a.data(), count);
    reducer->allreduce(b.data(), count);
    std::string what = rc.label + " ranks=" + std::to_string(ck.size) + " inexact";
    ck.expect(std::memcmp(a.data(), b.data(), count * sizeof(float)) == 0, what + ": run 1 != run 2");
    ck.expect(ck.same_everywhere(fnv1a(a.data(), count)), what + ": ranks differ in bits");
  }
  check_traffic(comm, ck);
  check_isend(comm, ck);
  check_failed_transfer(comm, ck);
  long total = ck.sum(ck.failures > 0 ? 1 : 0);
  if (ck.rank == 0) std::printf("%s: %d ranks, %s\n", argv[0], ck.size, total == 0 ? "all checks passed" : "FAILED");
  return total == 0 ? 0 : 1;
}

}  // namespace
}  // namespace dtbench

int main(int argc, char** argv) {
  try {
    return dtbench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reducers_mpi_check: %s\n", e.what());
    return 1;
  }
}
