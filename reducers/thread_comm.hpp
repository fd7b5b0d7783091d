// In-process transport: N ranks are N threads of one process, as in gloo's tests, so the reducer tests
// can sweep 1..16 ranks inside one gtest binary.
//
// Each rank has a mailbox. send() posts a descriptor (source, tag, pointer, bytes) to the destination's
// mailbox and waits until the receiver has copied the bytes (rendezvous: one copy, and no buffering an
// algorithm could come to rely on). recv() takes the oldest matching descriptor, copies, and marks it
// done. isend() posts the descriptor and returns; wait() is the rest of send(). abort() wakes every blocked rank with RunFailed so a failing rank never hangs a test.
#pragma once

#include <functional>
#include <string>

#include "reducers/comm.hpp"

namespace dtbench {

class ThreadWorld;  // reducers/thread_world.hpp

class ThreadComm : public Comm {
 public:
  ThreadComm(ThreadWorld& world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override;
  void barrier() override;
  [[noreturn]] void abort(const std::string& reason) override;
  void check_alive() const override;
  std::string transport() const override { return "thread"; }

 private:
  void do_send(int dst, const void* buf, size_t bytes, int tag) override;
  void do_recv(int src, void* buf, size_t bytes, int tag) override;
  int do_recv_any(void* buf, size_t bytes, int tag) override;
  void do_sendrecv(int dst, const void* sendbuf, size_t sendbytes, int src, void* recvbuf, size_t recvbytes,
                   int tag) override;
  std::unique_ptr<SendRequest::Pending> do_isend(int dst, const void* buf, size_t bytes, int tag) override;

  ThreadWorld& world_;
  int rank_;
};

// Runs fn(comm) on `nranks` threads, one per rank, and returns when all are done. When a rank throws,
// the world is aborted (so the others stop instead of hanging) and the first rank's exception, the
// cause rather than the aborts it triggered, is rethrown here.
void run_ranks(int nranks, const std::function<void(Comm&)>& fn);

}  // namespace dtbench
