// The thread transport itself: message order, matching by source and tag, size checks, barrier and
// abort (a failing rank must stop the others, never hang a test), non-blocking sends, and the Comm's traffic
// counters.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "reducers/thread_comm.hpp"
#include "reducers/thread_world.hpp"

namespace dtbench {
namespace {

TEST(ThreadComm, RanksAndSizes) {
  std::atomic<int> sum{0};
  run_ranks(5, [&](Comm& c) {
    EXPECT_EQ(c.size(), 5);
    EXPECT_EQ(c.transport(), "thread");
    sum += c.rank();
  });
  EXPECT_EQ(sum.load(), 0 + 1 + 2 + 3 + 4);
}

TEST(ThreadComm, MessagesOnOneTagKeepTheirOrderAndTagsMatchSeparately) {
  run_ranks(2, [](Comm& c) {
    if (c.rank() == 0) {
      int a = 1, b = 2, t = 99;
      // Rank 1 receives tag 7 first although tag 5 messages were posted earlier: matching is by tag.
      std::vector<int> order = {a, b};
      std::thread extra([&] { c.send(1, &t, sizeof t, 7); });
      c.send(1, &order[0], sizeof(int), 5);
      c.send(1, &order[1], sizeof(int), 5);
      extra.join();
    } else {
      int t = 0, x = 0, y = 0;
      c.recv(0, &t, sizeof t, 7);
      c.recv(0, &x, sizeof x, 5);
      c.recv(0, &y, sizeof y, 5);
      EXPECT_EQ(t, 99);
      EXPECT_EQ(x, 1);
      EXPECT_EQ(y, 2);
    }
  });
}

TEST(ThreadComm, SendrecvRingShiftDoesNotDeadlock) {
  const int n = 7;
  run_ranks(n, [&](Comm& c) {
    std::vector<double> out(1000, c.rank()), in(1000, -1);
    int right = (c.rank() + 1) % n, left = (c.rank() + n - 1) % n;
    c.sendrecv(right, out.data(), out.size() * sizeof(double), left, in.data(), in.size() * sizeof(double), 3);
    for (double v : in) ASSERT_EQ(v, left);
  });
}

TEST(ThreadComm, ZeroByteMessagesMatch) {
  run_ranks(2, [](Comm& c) {
    int other = 1 - c.rank();
    c.sendrecv(other, nullptr, 0, other, nullptr, 0, 1);
  });
}

TEST(ThreadComm, SizeMismatchIsAnErrorNotAHang) {
  try {
    run_ranks(2, [](Comm& c) {
      char buf[16] = {};
      if (c.rank() == 0) c.send(1, buf, 16, 1);
      else c.recv(0, buf, 8, 1);
    });
    FAIL() << "no error";
  } catch (const RunFailed& e) {
    EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos) << e.what();
  }
}

TEST(ThreadComm, AFailingRankStopsBlockedRanksAndItsErrorIsReported) {
  try {
    run_ranks(4, [](Comm& c) {
      if (c.rank() == 2) throw BadInput("rank 2 gave up");
      char x;
      c.recv((c.rank() + 1) % 4, &x, 1, 1);  // never sent: only the abort ends this
    });
    FAIL() << "no error";
  } catch (const BadInput& e) {
    EXPECT_STREQ(e.what(), "rank 2 gave up");
  }
}

// Runs 64 thread ranks with the address space limited to what is in use now plus 64 MiB: a few 8 MiB stacks
// fit, 64 do not. Exits 1 printing the RunFailed, 0 when every thread started. (For a death test: a child
// process.)
void run_ranks_out_of_address_space() {
  std::ifstream status("/proc/self/status");
  std::string key;
  long kib = 0;
  while (status >> key && key != "VmSize:") status.ignore(1 << 10, '\n');
  status >> kib;
  rlimit rl{};
  rl.rlim_cur = rl.rlim_max = static_cast<rlim_t>(kib + (64 << 10)) << 10;
  ::setrlimit(RLIMIT_AS, &rl);
  try {
    run_ranks(64, [](Comm& c) { c.barrier(); });
  } catch (const RunFailed& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(1);
  }
  std::exit(0);
}

// GCC says AddressSanitizer with __SANITIZE_ADDRESS__, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define DTBENCH_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DTBENCH_TEST_ASAN 1
#endif
#endif

// A thread that cannot be created was std::terminate, since the threads already started were still joinable.
// It is a RunFailed naming the rank, after the started ranks, blocked on the missing ones, have been stopped
// and joined.
TEST(ThreadComm, ThreadCreationFailureIsARunFailure) {
#if defined(DTBENCH_TEST_ASAN)
  GTEST_SKIP() << "AddressSanitizer maps its shadow and fake stacks in the address space this test exhausts";
#endif
  EXPECT_EXIT(run_ranks_out_of_address_space(), ::testing::ExitedWithCode(1),
              "thread transport: could not start the thread of rank [0-9]+ of 64 \\(.*\\); run fewer ranks");
}

TEST(ThreadComm, BarrierSeparatesPhases) {
  std::atomic<int> before{0};
  run_ranks(6, [&](Comm& c) {
    ++before;
    c.barrier();
    EXPECT_EQ(before.load(), 6);
    c.barrier();
  });
}

TEST(ThreadComm, AbortWakesABarrier) {
  EXPECT_THROW(run_ranks(3,
                         [](Comm& c) {
                           if (c.rank() == 0) c.abort("stop");
                           c.barrier();
                         }),
               RunFailed);
}

TEST(ThreadComm, BadRankIsAnError) {
  EXPECT_THROW(run_ranks(2,
                         [](Comm& c) {
                           int x = 0;
                           c.send(5, &x, sizeof x, 1);
                         }),
               RunFailed);
  EXPECT_THROW(ThreadWorld(0), BadInput);
}

TEST(ThreadComm, TrafficCountsEveryTransferOnceAndResets) {
  run_ranks(3, [](Comm& c) {
    std::vector<char> buf(1000);
    const int me = c.rank(), right = (me + 1) % 3, left = (me + 2) % 3;
    // A ring shift of 100 bytes each way, a zero-byte one, then rank 0 sends 7 bytes to rank 1.
    c.sendrecv(right, buf.data(), 100, left, buf.data() + 500, 100, 1);
    c.sendrecv(right, nullptr, 0, left, nullptr, 0, 2);
    if (me == 0) c.send(1, buf.data(), 7, 3);
    if (me == 1) c.recv(0, buf.data(), 7, 3);
    c.barrier();  // not a transfer: counts nothing
    const CommTraffic t = c.traffic();
    EXPECT_EQ(t.sent_bytes, 100u + (me == 0 ? 7 : 0)) << "rank " << me;
    EXPECT_EQ(t.received_bytes, 100u + (me == 1 ? 7 : 0)) << "rank " << me;
    EXPECT_EQ(t.sent_messages, 2u + (me == 0 ? 1 : 0)) << "rank " << me;
    EXPECT_EQ(t.received_messages, 2u + (me == 1 ? 1 : 0)) << "rank " << me;
    c.reset_traffic();
    const CommTraffic z = c.traffic();
    EXPECT_EQ(z.sent_bytes + z.received_bytes + z.sent_messages + z.received_messages, 0u);
  });
}

// recv_any takes each sender's message once, says who sent it, keeps one sender's messages in order, leaves other
// tags alone, counts like recv, and a size mismatch is an error naming the sender.
TEST(ThreadComm, RecvAnyReturnsTheSourceAndKeepsEachSendersOrder) {
  for (int ranks : {2, 3, 5}) {
    run_ranks(ranks, [&](Comm& c) {
      const int me = c.rank();
      if (me != 0) {
        for (int k = 0; k < 3; ++k) {
          const int v = 100 * me + k;
          c.send(0, &v, sizeof v, 7);
        }
        const int other = -me;
        c.send(0, &other, sizeof other, 8);
        return;
      }
      c.reset_traffic();
      std::vector<int> next(static_cast<size_t>(ranks), 0);  // the next k expected from each sender
      for (int m = 0; m < 3 * (ranks - 1); ++m) {
        int v = -1;
        const int src = c.recv_any(&v, sizeof v, 7);
        ASSERT_TRUE(src >= 1 && src < ranks) << src;
        EXPECT_EQ(v, 100 * src + next[static_cast<size_t>(src)]++);
      }
      for (int r = 1; r < ranks; ++r) {
        EXPECT_EQ(next[static_cast<size_t>(r)], 3);
        int v = 0;
        c.recv(r, &v, sizeof v, 8);  // tag 8 was never taken by the recv_any on tag 7
        EXPECT_EQ(v, -r);
      }
      EXPECT_EQ(c.traffic().received_messages, 4u * static_cast<uint64_t>(ranks - 1));
      EXPECT_EQ(c.traffic().received_bytes, 4u * sizeof(int) * static_cast<uint64_t>(ranks - 1));
    });
  }
  try {
    run_ranks(2, [](Comm& c) {
      double d = 1;
      int i = 0;
      if (c.rank() == 1) c.send(0, &d, sizeof d, 3);
      else c.recv_any(&i, sizeof i, 3);
    });
    FAIL() << "a size mismatch passed";
  } catch (const RunFailed& e) {
    // Both ends throw and run_ranks reports whichever did first: the receiver names the sender, the sender itself.
    const std::string what = e.what();
    EXPECT_TRUE(what.find("rank 0 expected 4 bytes from rank 1 (tag 3), got 8") != std::string::npos ||
                what.find("rank 1 sent 8 bytes (tag 3) to rank 0") != std::string::npos)
        << what;
  }
}

// exchange: every rank puts a message to every other rank (its own tag per destination) and gets theirs, in one
// call; every piece arrives where it was listed and is counted once.
TEST(ThreadComm, ExchangeWithEveryPeerAtOnce) {
  for (int ranks : {1, 2, 3, 6}) {
    run_ranks(ranks, [&](Comm& c) {
      const int me = c.rank();
      std::vector<int> out(static_cast<size_t>(ranks)), in(static_cast<size_t>(ranks), -1);
      std::vector<SendPiece> sends;
      std::vector<RecvPiece> recvs;
      for (int p = 0; p < ranks; ++p) {
        if (p == me) continue;
        out[static_cast<size_t>(p)] = 1000 * me + p;
        sends.push_back({p, &out[static_cast<size_t>(p)], sizeof(int), 10 + p});
        recvs.push_back({p, &in[static_cast<size_t>(p)], sizeof(int), 10 + me});
      }
      c.reset_traffic();
      c.exchange(sends, recvs);
      for (int p = 0; p < ranks; ++p) {
        if (p != me) {
          EXPECT_EQ(in[static_cast<size_t>(p)], 1000 * p + me) << "rank " << me << " from " << p;
        }
      }
      const uint64_t peers = static_cast<uint64_t>(ranks - 1);
      EXPECT_EQ(c.traffic(), (CommTraffic{peers * sizeof(int), peers * sizeof(int), peers, peers}));
    });
  }
}

TEST(ThreadComm, IsendReturnsBeforeTheReceiverComesAndKeepsOrder) {
  // Both ranks send first and receive after: with blocking sends of this strictly synchronous transport this
  // deadlocks, so it passes only when isend returns at once. Three sends in flight on one tag arrive in order.
  run_ranks(2, [](Comm& c) {
    const int other = 1 - c.rank();
    const int out[3] = {10 * c.rank() + 1, 10 * c.rank() + 2, 10 * c.rank() + 3};
    SendRequest r[3];
    for (int k = 0; k < 3; ++k) r[k] = c.isend(other, &out[k], sizeof(int), 4);
    EXPECT_EQ(c.traffic().sent_messages, 0u);  // counted when completed, not when posted
    for (int k = 0; k < 3; ++k) {
      int in = -1;
      c.recv(other, &in, sizeof in, 4);
      EXPECT_EQ(in, 10 * other + k + 1);
    }
    for (auto& q : r) c.wait(q);
    EXPECT_FALSE(r[0].active());
    c.wait(r[0]);  // an inactive request: nothing
    const CommTraffic t = c.traffic();
    EXPECT_EQ(t.sent_bytes, 3 * sizeof(int));
    EXPECT_EQ(t.sent_messages, 3u);
    EXPECT_EQ(t.received_messages, 3u);
  });
}

TEST(ThreadComm, AnIsendDroppedUnwaitedIsWithdrawn) {
  // Rank 0 posts a message and drops the request before anyone received it: rank 1's receive on that tag gets
  // the next message, and nothing points into the freed request.
  run_ranks(2, [](Comm& c) {
    if (c.rank() == 0) {
      const int dropped = 1, kept = 2;
      { SendRequest r = c.isend(1, &dropped, sizeof dropped, 6); }
      c.barrier();
      c.send(1, &kept, sizeof kept, 6);
      EXPECT_EQ(c.traffic().sent_messages, 1u);
    } else {
      c.barrier();
      int in = 0;
      c.recv(0, &in, sizeof in, 6);
      EXPECT_EQ(in, 2);
    }
  });
}

TEST(ThreadComm, AnIsendOfTheWrongSizeFailsItsWait) {
  // Both sides report the mismatch: the sender's wait (checked here, on rank 0: its error names what it sent,
  // the request is spent and nothing is counted) and the receiver's recv (rethrown by run_ranks).
  EXPECT_THROW(run_ranks(2,
                         [](Comm& c) {
                           char buf[16] = {};
                           if (c.rank() == 0) {
                             SendRequest r = c.isend(1, buf, 16, 1);
                             try {
                               c.wait(r);
                               ADD_FAILURE() << "the sender's wait did not fail";
                             } catch (const RunFailed& e) {
                               EXPECT_NE(std::string(e.what()).find("sent 16 bytes"), std::string::npos) << e.what();
                             }
                             EXPECT_FALSE(r.active());
                             EXPECT_EQ(c.traffic().sent_messages, 0u);
                           } else {
                             c.recv(0, buf, 8, 1);
                           }
                         }),
               RunFailed);
}

TEST(ThreadComm, AnIsendDroppedWhileItsReceiverCopiesWaitsForTheCopy) {
  // Rank 1 waits in recv before rank 0 posts 16 MiB and drops the request at once: usually rank 1 is copying by
  // then, and the drop must wait for the copy to end (the descriptor lives in the request: returning at once is
  // a use after free, which the sanitizer job sees), or else it withdrew the message first. Rank 0 then sends a
  // second message, so rank 1 ends either way: it reads the first one whole or only the second.
  run_ranks(2, [](Comm& c) {
    std::vector<char> first(1 << 24, 7), second(1 << 24, 9), in(1 << 24, 0);
    if (c.rank() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      { SendRequest r = c.isend(1, first.data(), first.size(), 3); }
      c.send(1, second.data(), second.size(), 3);
    } else {
      c.recv(0, in.data(), in.size(), 3);
      if (in.front() == 7) {
        EXPECT_EQ(in, first);  // taken before the drop: the whole message arrived
        c.recv(0, in.data(), in.size(), 3);
      }
      EXPECT_EQ(in, second);
    }
  });
}

TEST(ThreadComm, AFailedTransferIsNotCounted) {
  run_ranks(2, [](Comm& c) {
    int x = 0;
    EXPECT_THROW(c.send(5, &x, sizeof x, 1), RunFailed);
    EXPECT_EQ(c.traffic().sent_messages, 0u);
    EXPECT_EQ(c.traffic().sent_bytes, 0u);
  });
}

}  // namespace
}  // namespace dtbench
