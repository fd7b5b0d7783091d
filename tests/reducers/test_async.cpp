// The asynchronous start/wait interface: a FIFO of buckets executed in order on the reducer's
// communication thread, as the trainer uses it (start one bucket after another during backward, wait
// for all at the end), and failures that surface in wait() instead of hanging the ranks.
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "reducers/pattern.hpp"
#include "reducers/reducer.hpp"
#include "reducers/thread_comm.hpp"

namespace dtbench {
namespace {

class AsyncBuckets : public testing::TestWithParam<std::string> {};

TEST_P(AsyncBuckets, QueuedBucketsAllComeOutExact) {
  const std::string name = GetParam();
  const std::vector<size_t> buckets = {1000, 0, 3, 65536, 10007, 1};  // uneven, like layers
  const size_t total = std::accumulate(buckets.begin(), buckets.end(), size_t{0});
  for (int ranks : {1, 2, 3, 5, 8}) {
    CheckPattern pattern(ranks);
    run_ranks(ranks, [&](Comm& comm) {
      auto reducer = make_reducer(name, comm);
      std::vector<float> grad(total);
      pattern.fill(comm.rank(), grad.data(), total);
      std::vector<uint64_t> tickets;
      size_t off = 0;
      for (size_t n : buckets) {
        tickets.push_back(reducer->start(grad.data() + off, n));
        off += n;
      }
      // Waiting for the first ticket leaves later ones possibly running; the first bucket is done.
      reducer->wait(tickets[0]);
      for (size_t i = 0; i < buckets[0]; ++i) ASSERT_EQ(grad[i], pattern.expected(i)) << i;
      reducer->wait();
      // Each bucket used the pattern at its global offset, so the whole buffer checks as one.
      EXPECT_EQ(pattern.count_wrong(grad.data(), total), 0u) << "ranks " << ranks;
      // A blocking call after async ones: it waits for the queue first, then runs.
      pattern.fill(comm.rank(), grad.data(), total);
      reducer->start(grad.data(), total / 2);
      reducer->allreduce(grad.data() + total / 2, total - total / 2);
      EXPECT_EQ(pattern.count_wrong(grad.data(), total / 2), 0u);
      // The second half started at offset total/2 but was filled with indices total/2.., same check.
      for (size_t i = total / 2; i < total; ++i) ASSERT_EQ(grad[i], pattern.expected(i)) << i;
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Thread, AsyncBuckets,
                         testing::Values("parameter_server", "tree", "butterfly", "ring", "halving_doubling"));

TEST(AsyncFailure, MismatchedCountsFailInWaitOnEveryRank) {
  // Rank 1 passes a different count: the transport sees a size mismatch, the rank's wait() rethrows,
  // run_ranks aborts the others, and the test ends with RunFailed instead of a hang.
  EXPECT_THROW(run_ranks(3,
                         [](Comm& comm) {
                           auto reducer = make_reducer("ring", comm);
                           std::vector<float> buf(300, 1.0f);
                           reducer->start(buf.data(), comm.rank() == 1 ? 299 : 300);
                           reducer->wait();
                         }),
               RunFailed);
}

TEST(AsyncBusyTime, CountsRunTimeOnBothThreads) {
  // busy_seconds() is the time spent inside the algorithm, blocking or on the communication thread:
  // it grows with each call and never exceeds the wall time around them.
  run_ranks(2, [](Comm& comm) {
    auto reducer = make_reducer("ring", comm);
    std::vector<float> buf(1 << 16, 1.0f);
    EXPECT_EQ(reducer->busy_seconds(), 0.0);
    const auto t0 = std::chrono::steady_clock::now();
    reducer->allreduce(buf.data(), buf.size());
    const double after_sync = reducer->busy_seconds();
    EXPECT_GT(after_sync, 0.0);
    reducer->start(buf.data(), buf.size());
    reducer->wait();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GT(reducer->busy_seconds(), after_sync);
    EXPECT_LE(reducer->busy_seconds(), wall);
  });
}

TEST(AsyncFailure, DestructorWaitsForQueuedWork) {
  // Destroying a reducer with requests still queued must finish them (their buffers are on the wire).
  run_ranks(4, [](Comm& comm) {
    CheckPattern pattern(4);
    std::vector<float> buf(50000);
    pattern.fill(comm.rank(), buf.data(), buf.size());
    {
      auto reducer = make_reducer("halving_doubling", comm);
      reducer->start(buf.data(), buf.size());
    }
    EXPECT_EQ(pattern.count_wrong(buf.data(), buf.size()), 0u);
  });
}

}  // namespace
}  // namespace dtbench
