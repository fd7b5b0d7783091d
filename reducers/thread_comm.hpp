// In-process transport: N ranks are N threads of one process, as in gloo's tests, so the reducer tests
// can sweep 1..16 ranks inside one gtest binary.
//
// Each rank has a mailbox. send() posts a descriptor (source, tag, pointer, bytes) to the destination's
// mailbox and waits until the receiver has copied the bytes (rendezvous: one copy, and no buffering an
// algorithm could come to rely on). recv() takes the oldest matching descriptor, copies, and marks it
// done. abort() wakes every blocked rank with RunFailed so a failing rank never hangs a test.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "reducers/comm.hpp"

namespace dtbench {

class ThreadWorld;

class ThreadComm : public Comm {
 public:
  ThreadComm(ThreadWorld& world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override;
  void send(int dst, const void* buf, size_t bytes, int tag) override;
  void recv(int src, void* buf, size_t bytes, int tag) override;
  void sendrecv(int dst, const void* sendbuf, size_t sendbytes, int src, void* recvbuf, size_t recvbytes,
                int tag) override;
  void barrier() override;
  [[noreturn]] void abort(const std::string& reason) override;
  std::string transport() const override { return "thread"; }

 private:
  ThreadWorld& world_;
  int rank_;
};

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
  void receive(int me, int src, void* buf, size_t bytes, int tag);
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

// Runs fn(comm) on `nranks` threads, one per rank, and returns when all are done. When a rank throws,
// the world is aborted (so the others stop instead of hanging) and the first rank's exception, the
// cause rather than the aborts it triggered, is rethrown here.
void run_ranks(int nranks, const std::function<void(Comm&)>& fn);

}  // namespace dtbench
