// for_each_bounded (core/bounded_pool.hpp): every index runs once, never more than the bound at once (and the bound
// is reached when the first bodies wait for each other), a worker runs one body at a time, and a failing body neither
// stops the others nor is lost.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/bounded_pool.hpp"

namespace dtbench {
namespace {

TEST(BoundedPool, EveryIndexOnceAndNeverMoreThanTheBoundAtOnce) {
  for (int bound : {1, 2, 3, 8}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{12}}) {
      std::vector<std::atomic<int>> runs(count);
      std::atomic<int> busy{0}, most{0}, started{0}, clashes{0}, out_of_range{0};
      std::vector<std::atomic<int>> in_worker(static_cast<size_t>(bound));
      const int wave = static_cast<int>(std::min(count, static_cast<size_t>(bound)));
      for_each_bounded(count, bound, [&](size_t i, int worker) {
        if (worker < 0 || worker >= wave) {
          ++out_of_range;
          return;
        }
        if (++in_worker[static_cast<size_t>(worker)] != 1) ++clashes;  // a second body on a busy worker
        const int now = ++busy;
        ++started;
        for (int m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
        }
        // The first bodies wait (10 s at most) until a whole wave has started: at once if the pool runs `bound` of
        // them together, never if it runs them one after another.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (started.load() < wave && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        --busy;
        --in_worker[static_cast<size_t>(worker)];
        ++runs[i];
      });
      EXPECT_EQ(out_of_range.load(), 0) << "a worker outside [0, " << wave << ")";
      EXPECT_EQ(clashes.load(), 0) << "two bodies at once on one worker";
      for (size_t i = 0; i < count; ++i) EXPECT_EQ(runs[i].load(), 1) << "bound " << bound << ", index " << i;
      EXPECT_LE(most.load(), bound);
      EXPECT_EQ(most.load(), wave) << "bound " << bound << ", count " << count;
    }
  }
}

TEST(BoundedPool, AFailureLetsTheOthersRunAndIsRethrownAtTheEnd) {
  std::atomic<int> done{0};
  try {
    for_each_bounded(6, 2, [&](size_t i, int) {
      if (i == 1) throw std::runtime_error("body 1 failed");
      ++done;
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "body 1 failed");
  }
  EXPECT_EQ(done.load(), 5);
}

}  // namespace
}  // namespace dtbench
