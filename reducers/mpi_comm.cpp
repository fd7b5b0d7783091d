#include "reducers/mpi_comm.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "core/error.hpp"

namespace dtbench {
namespace {

// MPI counts are int: messages above this go as several pieces (both ends split a message the same
// way because they agree on its byte count).
constexpr size_t kMaxPiece = size_t{1} << 30;

size_t piece_count(size_t bytes) { return bytes == 0 ? 1 : (bytes + kMaxPiece - 1) / kMaxPiece; }

}  // namespace

MpiComm& require_mpi(Comm& comm, const std::string& who) {
  auto* mpi = dynamic_cast<MpiComm*>(&comm);
  if (mpi == nullptr)
    throw BadInput(who + " needs the MPI transport (run under mpirun), not the " + comm.transport() + " transport");
  return *mpi;
}

// ---- MpiComm ---------------------------------------------------------------------------------------------

MpiComm::MpiComm(MPI_Comm parent) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw RunFailed("MpiComm needs MPI to be initialised first (create an MpiSession)");
  if (MPI_Comm_dup(parent, &comm_) != MPI_SUCCESS) throw RunFailed("MPI_Comm_dup failed");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  nodes_ = find_nodes();
}

std::vector<int> MpiComm::find_nodes() const {
  // The node's lowest rank among the ranks that share memory and SLURM_NODEID with this one.
  MPI_Comm shared = MPI_COMM_NULL, node = MPI_COMM_NULL;
  check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &shared), "MPI_Comm_split_type");
  int slurm_node = 0;
  if (const char* id = std::getenv("SLURM_NODEID")) slurm_node = std::max(0, std::atoi(id));
  check(MPI_Comm_split(shared, slurm_node, rank_, &node), "MPI_Comm_split");
  int lowest = rank_;
  check(MPI_Allreduce(&rank_, &lowest, 1, MPI_INT, MPI_MIN, node), "MPI_Allreduce");
  MPI_Comm_free(&node);
  MPI_Comm_free(&shared);
  std::vector<int> lowest_of(static_cast<size_t>(size_));
  check(MPI_Allgather(&lowest, 1, MPI_INT, lowest_of.data(), 1, MPI_INT, comm_), "MPI_Allgather");
  // Number the nodes in the order of their lowest ranks.
  std::vector<int> out(static_cast<size_t>(size_)), index(static_cast<size_t>(size_), -1);
  int next = 0;
  for (int r = 0; r < size_; ++r) {
    int& k = index[static_cast<size_t>(lowest_of[static_cast<size_t>(r)])];
    if (k < 0) k = next++;
    out[static_cast<size_t>(r)] = k;
  }
  return out;
}

MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiComm::check(int rc, const char* call) const {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw RunFailed(std::string(call) + " failed on rank " + std::to_string(rank_) + ": " + std::string(text, len));
}

int mpi_wait_all(std::vector<MPI_Request>& reqs, MPI_Status* statuses, int poll_us) {
  const int n = static_cast<int>(reqs.size());
  MPI_Status* st = statuses == nullptr ? MPI_STATUSES_IGNORE : statuses;
  if (poll_us <= 0) return MPI_Waitall(n, reqs.data(), st);
  constexpr int kQuickTests = 16;
  const timespec pause{0, static_cast<long>(poll_us) * 1000L};
  for (int tests = 0;;) {
    int done = 0;
    const int rc = MPI_Testall(n, reqs.data(), &done, st);
    if (rc != MPI_SUCCESS || done) return rc;
    if (tests < kQuickTests) ++tests;  // counts the quick tests only: a long wait never overflows it
    else nanosleep(&pause, nullptr);
  }
}

void MpiComm::wait_all(std::vector<MPI_Request>& reqs, MPI_Status* statuses, const char* call) const {
  check(mpi_wait_all(reqs, statuses, poll_sleep_us_), call);
}

void MpiComm::post_sends(int dst, const void* buf, size_t bytes, int tag, std::vector<MPI_Request>& reqs,
                         const char* call) const {
  const char* s = static_cast<const char*>(buf);
  for (size_t k = 0, n = piece_count(bytes); k < n; ++k) {
    const size_t off = k * kMaxPiece, len = std::min(kMaxPiece, bytes - off);
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Isend(s + off, static_cast<int>(len), MPI_BYTE, dst, tag, comm_, &r), call);  // failed: no request
    reqs.push_back(r);
  }
}

// What a transfer that throws leaves posted: each receive is cancelled and completed (MPI_Cancel then MPI_Wait,
// which returns at once for one that was not yet matched), so that it can neither write into a buffer the caller
// frees while unwinding nor take a later message of the same tag and peer from the receive meant for it (a test in
// tests/reducers/mpi_check.cpp shows both ends of that); each send is left to finish on its own (MPI_Request_free:
// waiting could block on a peer that never receives, and an MPI error ends the run anyway).
struct MpiComm::Unfinished {
  std::vector<MPI_Request>& reqs;
  size_t receives;  // reqs[0, receives) are receives, the rest sends
  bool done = false;
  ~Unfinished() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (done || finalized) return;
    for (size_t k = 0; k < reqs.size(); ++k) {
      MPI_Request& r = reqs[k];
      if (r == MPI_REQUEST_NULL) continue;  // completed, or its post failed
      if (k < receives) {
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
      } else {
        MPI_Request_free(&r);
      }
    }
  }
};

void MpiComm::transfer(std::span<const SendPiece> sends, std::span<const RecvPiece> recvs, const char* call,
                       int* source) {
  std::vector<MPI_Request> reqs;
  struct Expected {
    size_t bytes;
    int tag;
  };
  std::vector<Expected> expect;  // each receive piece's
  size_t receives = 0, pieces = 0;
  for (const RecvPiece& p : recvs) receives += piece_count(p.bytes);
  for (const SendPiece& p : sends) pieces += piece_count(p.bytes);
  reqs.reserve(receives + pieces);  // no allocation between a post and its request's push
  expect.reserve(receives);
  Unfinished unfinished{reqs, receives};
  for (const RecvPiece& p : recvs) {
    char* r = static_cast<char*>(p.buf);
    for (size_t k = 0, n = piece_count(p.bytes); k < n; ++k) {
      const size_t off = k * kMaxPiece, len = std::min(kMaxPiece, p.bytes - off);
      MPI_Request req = MPI_REQUEST_NULL;
      check(MPI_Irecv(r + off, static_cast<int>(len), MPI_BYTE, p.peer, p.tag, comm_, &req), call);  // failed: none
      reqs.push_back(req);
      expect.push_back({len, p.tag});
    }
  }
  for (const SendPiece& p : sends) post_sends(p.peer, p.buf, p.bytes, p.tag, reqs, call);
  std::vector<MPI_Status> st(reqs.size());
  wait_all(reqs, st.data(), call);
  unfinished.done = true;
  for (size_t k = 0; k < expect.size(); ++k) {
    int got = 0;
    MPI_Get_count(&st[k], MPI_BYTE, &got);
    if (static_cast<size_t>(got) != expect[k].bytes)
      throw RunFailed(std::string(call) + " on rank " + std::to_string(rank_) + ": expected " +
                      std::to_string(expect[k].bytes) + " bytes from rank " + std::to_string(st[k].MPI_SOURCE) +
                      " (tag " + std::to_string(expect[k].tag) + "), got " + std::to_string(got));
  }
  if (source != nullptr && !expect.empty()) *source = st[0].MPI_SOURCE;
}

void MpiComm::do_send(int dst, const void* buf, size_t bytes, int tag) {
  const SendPiece p{dst, buf, bytes, tag};
  transfer({&p, 1}, {}, "MPI_Send");
}

void MpiComm::do_recv(int src, void* buf, size_t bytes, int tag) {
  const RecvPiece p{src, buf, bytes, tag};
  transfer({}, {&p, 1}, "MPI_Recv");
}

void MpiComm::do_exchange(std::span<const SendPiece> sends, std::span<const RecvPiece> recvs) {
  transfer(sends, recvs, "MPI exchange");
}

int MpiComm::do_recv_any(void* buf, size_t bytes, int tag) {
  // One piece only: the pieces of a longer message could match different sources.
  if (bytes > kMaxPiece)
    throw RunFailed("MPI_Recv(any source) on rank " + std::to_string(rank_) + ": " + std::to_string(bytes) +
                    " bytes, more than one message of 1 GiB");
  const RecvPiece p{MPI_ANY_SOURCE, buf, bytes, tag};
  int source = MPI_ANY_SOURCE;
  transfer({}, {&p, 1}, "MPI_Recv(any source)", &source);
  return source;
}

void MpiComm::do_sendrecv(int dst, const void* sendbuf, size_t sendbytes, int src, void* recvbuf,
                          size_t recvbytes, int tag) {
  const SendPiece out{dst, sendbuf, sendbytes, tag};
  const RecvPiece in{src, recvbuf, recvbytes, tag};
  transfer({&out, 1}, {&in, 1}, "MPI_Sendrecv");
}

std::unique_ptr<SendRequest::Pending> MpiComm::do_isend(int dst, const void* buf, size_t bytes, int tag) {
  struct Posted : SendRequest::Pending {
    explicit Posted(const MpiComm& c) : comm(c) {}
    void wait() override { comm.wait_all(reqs, nullptr, "MPI_Isend"); }  // completed requests become null
    ~Posted() override {
      // Not waited for, or its wait failed (an error path): MPI finishes what is left on its own; the buffer
      // had better outlive it.
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized)
        for (MPI_Request& r : reqs)
          if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    }
    const MpiComm& comm;
    std::vector<MPI_Request> reqs;
  };
  auto p = std::make_unique<Posted>(*this);
  post_sends(dst, buf, bytes, tag, p->reqs, "MPI_Isend");  // a failed post: ~Posted frees the earlier pieces
  return p;
}

void MpiComm::barrier() { check(MPI_Barrier(comm_), "MPI_Barrier"); }

void MpiComm::abort(const std::string& reason) {
  std::string msg = "dtbench: rank " + std::to_string(rank_) + " aborts: " + reason + "\n";
  fputs(msg.c_str(), stderr);
  MPI_Abort(comm_, static_cast<int>(ExitCode::run_failed));
  std::abort();  // MPI_Abort does not return; this satisfies [[noreturn]]
}

}  // namespace dtbench
