// A bounded pool of threads over an index range: what runs several local jobs at once (a sweep's runs with
// --local --jobs N, a population's members with /local/concurrency).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dtbench {

// Runs body(i, worker) for every i in [0, count), in index order, on at most `threads` threads at once (the calling
// thread among them), each taking the next index as it finishes one. `worker` in [0, threads) names the thread (the
// calling one is 0): one body at a time per worker, so what a worker owns (a sweep's Open MPI session folder) is
// never used by two bodies at once. An exception from one body does not stop the others; the first one is rethrown
// once every body has returned.
inline void for_each_bounded(size_t count, int threads, const std::function<void(size_t, int)>& body) {
  std::atomic<size_t> next{0};
  std::exception_ptr first;
  std::mutex m;
  auto work = [&](int worker) {
    for (size_t i; (i = next++) < count;) {
      try {
        body(i, worker);
      } catch (...) {
        std::lock_guard<std::mutex> lock(m);
        if (!first) first = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  const size_t n = std::min(count, static_cast<size_t>(std::max(threads, 1)));
  for (size_t t = 1; t < n; ++t) pool.emplace_back(work, static_cast<int>(t));
  work(0);
  for (std::thread& t : pool) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace dtbench
