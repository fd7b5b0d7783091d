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

// Runs body(i) for every i in [0, count), in index order, on at most `threads` threads at once (the calling thread
// among them), each taking the next index as it finishes one. An exception from one body does not stop the others;
// the first one is rethrown once every body has returned.
inline void for_each_bounded(size_t count, int threads, const std::function<void(size_t)>& body) {
  std::atomic<size_t> next{0};
  std::exception_ptr first;
  std::mutex m;
  auto work = [&] {
    for (size_t i; (i = next++) < count;) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(m);
        if (!first) first = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  const size_t n = std::min(count, static_cast<size_t>(std::max(threads, 1)));
  for (size_t t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace dtbench
