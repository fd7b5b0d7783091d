// A Comm over some ranks of another: member i of the sub-communicator is rank members[i] of the parent,
// and every transfer goes through the parent's counting transfers (so the parent's traffic() holds what
// the sub-communicator moved too), with the caller's tags. What the hierarchical reducer runs its leader
// algorithm on: any algorithm written against Comm runs unchanged on a subset of the ranks.
#pragma once

#include <string>
#include <vector>

#include "reducers/comm.hpp"

namespace dtbench {

class SubComm : public Comm {
 public:
  // `members`: distinct parent ranks in ascending order, holding the parent's own rank. Throws RunFailed
  // otherwise.
  SubComm(Comm& parent, std::vector<int> members);
  // All of the parent's ranks: a view whose counters hold only what went through it (the parameter server's and
  // the workers' on one rank).
  explicit SubComm(Comm& parent);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  // Every member sends a zero-byte message to member 0, which then releases them (kTagSubBarrier).
  void barrier() override;
  [[noreturn]] void abort(const std::string& reason) override;  // the parent's
  void check_alive() const override { parent_.check_alive(); }
  std::string transport() const override { return parent_.transport(); }
  std::vector<int> nodes() const override;

 private:
  void do_send(int dst, const void* buf, size_t bytes, int tag) override;
  void do_recv(int src, void* buf, size_t bytes, int tag) override;
  // The parent's recv_any: RunFailed when the message came from a rank that is not a member.
  int do_recv_any(void* buf, size_t bytes, int tag) override;
  void do_sendrecv(int dst, const void* sendbuf, size_t sendbytes, int src, void* recvbuf, size_t recvbytes,
                   int tag) override;
  std::unique_ptr<SendRequest::Pending> do_isend(int dst, const void* buf, size_t bytes, int tag) override;
  // The parent's exchange with the members' parent ranks: posted at once there too (MpiComm's).
  void do_exchange(std::span<const SendPiece> sends, std::span<const RecvPiece> recvs) override;

  Comm& parent_;
  std::vector<int> members_;
  int rank_ = 0;
};

}  // namespace dtbench
