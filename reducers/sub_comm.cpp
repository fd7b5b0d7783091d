#include "reducers/sub_comm.hpp"

#include <algorithm>
#include <exception>
#include <numeric>

#include "core/error.hpp"
#include "reducers/allreduce.hpp"

namespace dtbench {

SubComm::SubComm(Comm& parent, std::vector<int> members) : parent_(parent), members_(std::move(members)) {
  if (!std::is_sorted(members_.begin(), members_.end()) ||
      std::adjacent_find(members_.begin(), members_.end()) != members_.end() ||
      (!members_.empty() && (members_.front() < 0 || members_.back() >= parent.size())))
    throw RunFailed("SubComm: members must be distinct ranks of the parent in ascending order");
  const auto me = std::find(members_.begin(), members_.end(), parent.rank());
  if (me == members_.end()) throw RunFailed("SubComm: rank " + std::to_string(parent.rank()) + " is not a member");
  rank_ = static_cast<int>(me - members_.begin());
}

SubComm::SubComm(Comm& parent) : parent_(parent), members_(static_cast<size_t>(parent.size())), rank_(parent.rank()) {
  std::iota(members_.begin(), members_.end(), 0);
}

void SubComm::barrier() {
  char none = 0;
  if (rank_ == 0) {
    for (int i = 1; i < size(); ++i) parent_.recv(members_[size_t(i)], &none, 0, kTagSubBarrier);
    for (int i = 1; i < size(); ++i) parent_.send(members_[size_t(i)], &none, 0, kTagSubBarrier);
  } else {
    parent_.send(members_[0], &none, 0, kTagSubBarrier);
    parent_.recv(members_[0], &none, 0, kTagSubBarrier);
  }
}

void SubComm::abort(const std::string& reason) {
  parent_.abort(reason);
  std::terminate();  // not reached: Comm::abort never returns
}

std::vector<int> SubComm::nodes() const {
  // The parent's nodes of the members, renumbered in the order of each node's lowest member.
  const std::vector<int> all = parent_.nodes();
  std::vector<int> out, seen;
  for (int r : members_) {
    const auto at = std::find(seen.begin(), seen.end(), all[size_t(r)]);
    out.push_back(static_cast<int>(at - seen.begin()));
    if (at == seen.end()) seen.push_back(all[size_t(r)]);
  }
  return out;
}

void SubComm::do_send(int dst, const void* buf, size_t bytes, int tag) {
  parent_.send(members_.at(size_t(dst)), buf, bytes, tag);
}

void SubComm::do_recv(int src, void* buf, size_t bytes, int tag) {
  parent_.recv(members_.at(size_t(src)), buf, bytes, tag);
}

int SubComm::do_recv_any(void* buf, size_t bytes, int tag) {
  const int from = parent_.recv_any(buf, bytes, tag);
  const auto at = std::lower_bound(members_.begin(), members_.end(), from);
  if (at == members_.end() || *at != from)
    throw RunFailed("SubComm: member " + std::to_string(rank_) + " received a message (tag " + std::to_string(tag) +
                    ") from rank " + std::to_string(from) + " of the parent, which is not a member");
  return static_cast<int>(at - members_.begin());
}

void SubComm::do_sendrecv(int dst, const void* sendbuf, size_t sendbytes, int src, void* recvbuf, size_t recvbytes,
                          int tag) {
  parent_.sendrecv(members_.at(size_t(dst)), sendbuf, sendbytes, members_.at(size_t(src)), recvbuf, recvbytes, tag);
}

void SubComm::do_exchange(std::span<const SendPiece> sends, std::span<const RecvPiece> recvs) {
  std::vector<SendPiece> out(sends.begin(), sends.end());
  std::vector<RecvPiece> in(recvs.begin(), recvs.end());
  for (SendPiece& p : out) p.peer = members_.at(size_t(p.peer));
  for (RecvPiece& p : in) p.peer = members_.at(size_t(p.peer));
  parent_.exchange(out, in);
}

std::unique_ptr<SendRequest::Pending> SubComm::do_isend(int dst, const void* buf, size_t bytes, int tag) {
  return forwarded(parent_, parent_.isend(members_.at(size_t(dst)), buf, bytes, tag));
}

}  // namespace dtbench
