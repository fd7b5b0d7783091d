// The communicator every reducer runs on: ranks, point-to-point byte transfers with tags, a barrier
// and abort. Two implementations: MpiComm (reducers/mpi_comm.hpp, a duplicated MPI communicator) and
// ThreadComm (reducers/thread_comm.hpp, ranks are threads of one process, for tests and benchmarks).
//
// Semantics (both implementations honour them, so an algorithm correct on one is correct on the other):
// - send blocks until the receiver has taken the bytes (the thread transport is strictly synchronous,
//   like MPI_Ssend, so an algorithm that relies on buffering deadlocks in the unit tests, not on a
//   cluster); recv blocks until a message with that source and tag has arrived.
// - messages between one pair with one tag arrive in the order they were sent (MPI's non-overtaking).
// - the byte count of a recv must equal that of the matching send; a mismatch throws RunFailed.
// - sendrecv posts its send first, then receives, then waits for its send: the pairwise exchanges and
//   ring shifts of the algorithms cannot deadlock.
// A Comm may be used by several threads at once (the reducers' communication threads), provided
// concurrent users pick different tags.
#pragma once

#include <cstddef>
#include <string>

namespace dtbench {

class Comm {
 public:
  virtual ~Comm() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  virtual void send(int dst, const void* buf, size_t bytes, int tag) = 0;
  virtual void recv(int src, void* buf, size_t bytes, int tag) = 0;
  virtual void sendrecv(int dst, const void* sendbuf, size_t sendbytes, int src, void* recvbuf,
                        size_t recvbytes, int tag) = 0;
  virtual void barrier() = 0;
  // Ends every rank's participation: MPI aborts the job; the thread transport wakes every blocked
  // rank with RunFailed. Never returns.
  [[noreturn]] virtual void abort(const std::string& reason) = 0;

  // A short name for provenance ("mpi", "thread").
  virtual std::string transport() const = 0;
};

}  // namespace dtbench
