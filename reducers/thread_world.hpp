// The shared state of the in-process transport (reducers/thread_comm.hpp): one mailbox per rank, the
// barrier and the abort flag. It owns the ThreadComm of each rank.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "reducers/thread_comm.hpp"

namespace dtbench {

class ThreadWorld {
 public:
  explicit ThreadWorld(int nranks);
  ThreadWorld(const ThreadWorld&) = delete;
  ThreadWorld& operator=(const ThreadWorld&) = delete;

  int size() const { return static_cast<int>(comms_.size()); }
  ThreadComm& comm(int rank) { return *comms_.at(static_cast<size_t>(rank)); }
  // Marks the world aborted and wakes every blocked operation (they throw RunFailed).
  void abort(const std::string& reason);
  bool aborted() const;

 private:
  friend class ThreadComm;
  struct Message {
    int src;
    int tag;
    const void* data;
    size_t bytes;
    bool taken = false;  // a receiver is copying: the sender must keep the buffer alive
    bool done = false;
    bool size_mismatch = false;
  };
  struct Mailbox {
    std::mutex m;
    std::condition_variable cv;
    std::deque<Message*> posted;  // oldest first: non-overtaking per (source, tag)
  };

  void post(int dst, Message& msg);
  void wait_sent(int dst, Message& msg, int me);
  // For a send that will not be waited for: removes it from dst's mailbox, or, when a receiver has taken it,
  // waits for the copy to end (never for a receiver to come). Does not throw.
  void withdraw(int dst, Message& msg) noexcept;
  // Takes the oldest message from `src` (kAnySource: from any rank) with `tag`; returns its source.
  static constexpr int kAnySource = -1;
  int receive(int me, int src, void* buf, size_t bytes, int tag);
  void barrier(int me);
  void check_rank(int r, const char* what, int me) const;
  [[noreturn]] void throw_aborted(int me) const;

  std::vector<std::unique_ptr<ThreadComm>> comms_;
  std::vector<std::unique_ptr<Mailbox>> boxes_;
  mutable std::mutex state_m_;  // guards aborted_, reason_ and the barrier
  std::condition_variable barrier_cv_;
  bool aborted_ = false;
  std::string reason_;
  int barrier_waiting_ = 0;
  unsigned long barrier_generation_ = 0;
};

}  // namespace dtbench
