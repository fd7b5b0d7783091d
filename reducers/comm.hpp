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
// - isend posts a send and returns at once; wait(request) blocks until the send is complete (MPI_Isend and
//   MPI_Wait: the buffer may be reused; on the thread transport, the receiver has copied it). The buffer must
//   stay as it is until then. What a pipeline stage sends its neighbour while it computes the next
//   micro-batch (workloads/train/pipeline.cpp).
// - exchange posts every receive of a list, then every send of another, then waits for all (MPI_Irecv, MPI_Isend,
//   MPI_Waitall), each message with its own peer and tag: a rank's transfers with several peers at once, waited
//   for once (a parameter-server worker's puts and gets). The thread transport (and the default below) posts the
//   sends, takes the receives in the order listed, then waits for the sends: the order of the receives must not
//   depend on a peer that needs a later one first (its sends are synchronous), which MPI does not require.
// - recv_any receives a message with that tag from whichever rank the transport matches first (MPI_ANY_SOURCE)
//   and returns its source; one message of at most 1 GiB. What a server that answers the first worker to
//   come uses (the asynchronous parameter server, workloads/train/async_ps.cpp); its follow-up messages are
//   then received from that source by name, which non-overtaking keeps in order.
// A Comm may be used by several threads at once (the reducers' communication threads), provided
// concurrent users pick different tags.
//
// Traffic: every send, recv, recv_any, sendrecv, exchange and waited isend adds its bytes and messages to this
// communicator's counters (traffic(), reset_traffic()), so a test or `dtbench allreduce` reads what an algorithm
// moved. The public transfers are non-virtual: they call the transport's private do_send, do_recv, do_recv_any,
// do_sendrecv, do_exchange or do_isend and count what completed, so no transfer through a Comm can skip the
// count, whatever the transport (a decorator could be bypassed by using the bare Comm). The counters are relaxed atomics (two adds
// per direction, no lock), as several threads may use one Comm. Not counted: barrier, and what a
// library moves inside its own collectives (MPI_Allreduce of the `mpi` reducer on MpiComm::handle(),
// NCCL): the Comm never sees those bytes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/node_layout.hpp"

namespace dtbench {

// Bytes and messages a Comm moved since it was made or last reset. A sendrecv is one message each way;
// a zero-byte message counts as a message.
struct CommTraffic {
  uint64_t sent_bytes = 0, received_bytes = 0;
  uint64_t sent_messages = 0, received_messages = 0;
  bool operator==(const CommTraffic&) const = default;
};

// A send in flight, from Comm::isend; move-only; complete it with wait() on the Comm that posted it. Destroyed
// without a wait (an error path), it is never counted: the thread transport withdraws the message when no
// receiver has taken it yet and otherwise waits for the receiver's copy to end; MPI lets the send finish on its
// own (MPI_Request_free). Dropping one on purpose is a bug on either transport, hence [[nodiscard]].
class [[nodiscard]] SendRequest {
 public:
  // The transport's side of one posted send.
  struct Pending {
    virtual ~Pending() = default;
    virtual void wait() = 0;  // blocks until the send is complete (as Comm::wait); throws RunFailed on failure
  };
  SendRequest() = default;
  bool active() const { return pending_ != nullptr; }

 private:
  friend class Comm;
  SendRequest(std::unique_ptr<Pending> p, size_t bytes) : pending_(std::move(p)), bytes_(bytes) {}
  std::unique_ptr<Pending> pending_;
  size_t bytes_ = 0;
};

// One message of Comm::exchange: to or from `peer`, with its tag.
struct SendPiece {
  int peer;
  const void* buf;
  size_t bytes;
  int tag;
};
struct RecvPiece {
  int peer;
  void* buf;
  size_t bytes;
  int tag;
};

class Comm {
 public:
  virtual ~Comm() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  void send(int dst, const void* buf, size_t bytes, int tag) {
    do_send(dst, buf, bytes, tag);
    count_sent(bytes);
  }
  void recv(int src, void* buf, size_t bytes, int tag) {
    do_recv(src, buf, bytes, tag);
    count_received(bytes);
  }
  // Returns the rank the message came from.
  int recv_any(void* buf, size_t bytes, int tag) {
    const int src = do_recv_any(buf, bytes, tag);
    count_received(bytes);
    return src;
  }
  void sendrecv(int dst, const void* sendbuf, size_t sendbytes, int src, void* recvbuf, size_t recvbytes,
                int tag) {
    do_sendrecv(dst, sendbuf, sendbytes, src, recvbuf, recvbytes, tag);
    count_sent(sendbytes);
    count_received(recvbytes);
  }
  // Counts every piece once all are complete (this Comm counts none when it throws; a SubComm's parent has counted
  // what completed).
  void exchange(std::span<const SendPiece> sends, std::span<const RecvPiece> recvs) {
    do_exchange(sends, recvs);
    for (const SendPiece& p : sends) count_sent(p.bytes);
    for (const RecvPiece& p : recvs) count_received(p.bytes);
  }
  SendRequest isend(int dst, const void* buf, size_t bytes, int tag) {
    return SendRequest(do_isend(dst, buf, bytes, tag), bytes);
  }
  // Completes `request` (nothing when it is not active) and counts its bytes; it is inactive afterwards, also
  // when the wait throws.
  void wait(SendRequest& request) {
    if (!request.active()) return;
    const std::unique_ptr<SendRequest::Pending> p = std::move(request.pending_);
    p->wait();
    count_sent(request.bytes_);
  }
  virtual void barrier() = 0;
  // Ends every rank's participation: MPI aborts the job; the thread transport wakes every blocked
  // rank with RunFailed. Never returns.
  [[noreturn]] virtual void abort(const std::string& reason) = 0;

  // Throws RunFailed when the run was aborted; for waits outside the transport (the shared_memory
  // reducer's counters), which the transport's abort cannot wake. MPI's abort ends the process, so only
  // the thread transport needs it.
  virtual void check_alive() const {}

  // A short name for provenance ("mpi", "thread").
  virtual std::string transport() const = 0;

  // The node of every rank (index = rank) as the launcher placed them, numbered 0, 1, ... in the order of
  // each node's lowest rank: what the hierarchical reducer groups by. By default every rank is on node 0
  // (the thread transport: one process); MpiComm asks MPI and Slurm (mpi_comm.hpp).
  virtual std::vector<int> nodes() const { return std::vector<int>(static_cast<size_t>(size()), 0); }

  // The counters of the transfers that completed since construction or the last reset_traffic().
  CommTraffic traffic() const {
    return {sent_bytes_.load(std::memory_order_relaxed), received_bytes_.load(std::memory_order_relaxed),
            sent_messages_.load(std::memory_order_relaxed), received_messages_.load(std::memory_order_relaxed)};
  }
  void reset_traffic() {
    for (auto* c : {&sent_bytes_, &received_bytes_, &sent_messages_, &received_messages_})
      c->store(0, std::memory_order_relaxed);
  }

 protected:
  // For a Comm that forwards its transfers to another (SubComm): `inner`'s request as this one's pending send,
  // so both count the bytes when it is waited for.
  static std::unique_ptr<SendRequest::Pending> forwarded(Comm& inner, SendRequest request) {
    struct Forwarded : SendRequest::Pending {
      Forwarded(Comm& c, SendRequest r) : comm(c), request(std::move(r)) {}
      void wait() override { comm.wait(request); }
      Comm& comm;
      SendRequest request;
    };
    return std::make_unique<Forwarded>(inner, std::move(request));
  }

 private:
  // The transport's transfers, with the semantics above; reached only through the counting ones.
  virtual void do_send(int dst, const void* buf, size_t bytes, int tag) = 0;
  virtual void do_recv(int src, void* buf, size_t bytes, int tag) = 0;
  virtual int do_recv_any(void* buf, size_t bytes, int tag) = 0;
  virtual void do_sendrecv(int dst, const void* sendbuf, size_t sendbytes, int src, void* recvbuf,
                           size_t recvbytes, int tag) = 0;
  virtual std::unique_ptr<SendRequest::Pending> do_isend(int dst, const void* buf, size_t bytes, int tag) = 0;
  // By default: the sends posted with do_isend, the receives taken in order with do_recv, then the sends waited for.
  virtual void do_exchange(std::span<const SendPiece> sends, std::span<const RecvPiece> recvs) {
    std::vector<std::unique_ptr<SendRequest::Pending>> posted;  // destroyed unwaited on an error: withdrawn
    posted.reserve(sends.size());
    for (const SendPiece& p : sends) posted.push_back(do_isend(p.peer, p.buf, p.bytes, p.tag));
    for (const RecvPiece& p : recvs) do_recv(p.peer, p.buf, p.bytes, p.tag);
    for (auto& p : posted) p->wait();
  }

  void count_sent(size_t bytes) {
    sent_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    sent_messages_.fetch_add(1, std::memory_order_relaxed);
  }
  void count_received(size_t bytes) {
    received_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    received_messages_.fetch_add(1, std::memory_order_relaxed);
  }

  std::atomic<uint64_t> sent_bytes_{0}, received_bytes_{0}, sent_messages_{0}, received_messages_{0};
};

}  // namespace dtbench
