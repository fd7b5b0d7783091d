// MPI transport: a Comm over a duplicate of an MPI communicator, so reducer traffic never matches
// messages of any other MPI user in the program. MPI must be initialised first: MpiSession, included
// here for every user of the transport.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "reducers/comm.hpp"
#include "reducers/mpi_session.hpp"

namespace dtbench {

class MpiComm : public Comm {
 public:
  // Duplicates `parent` (MPI_Comm_dup) and sets MPI_ERRORS_RETURN on the copy, so failures become
  // RunFailed exceptions that name the call and the rank.
  explicit MpiComm(MPI_Comm parent = MPI_COMM_WORLD);
  ~MpiComm() override;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override;
  [[noreturn]] void abort(const std::string& reason) override;
  std::string transport() const override { return "mpi"; }
  // Ranks share a node when they share memory (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED) and, under Slurm,
  // have the same SLURM_NODEID: a test cluster whose emulated nodes run on one host (slurm/local-cluster.sh)
  // places ranks on distinct nodes that still share memory. Found once, in the constructor (collective).
  std::vector<int> nodes() const override { return nodes_; }

  // The duplicated communicator, for the reducer that calls MPI_Allreduce itself (its bytes are not
  // counted in traffic(): they move inside the library).
  MPI_Comm handle() const { return comm_; }

  // How a transfer waits for completion. 0 (the default): inside MPI_Waitall, which polls the transport
  // and keeps this thread's core busy. us > 0: MPI_Testall, then sleeps of `us` microseconds between
  // further tests. A reducer's communication thread that shares a core with the computation (one rank
  // per core) then leaves that core to backward instead of competing with it; each transfer may finish
  // up to one sleep later than it could. The wait is in MPI_Testall because Open MPI's shared-memory
  // and TCP transports only progress when the library is called: there is no interrupt-driven wait.
  void set_poll_sleep_us(int us) { poll_sleep_us_ = us; }
  int poll_sleep_us() const { return poll_sleep_us_; }
  // Completes `reqs` (statuses may be null) with this communicator's waiting policy; `call` names the
  // operation in an error.
  void wait_all(std::vector<MPI_Request>& reqs, MPI_Status* statuses, const char* call) const;

 private:
  void do_send(int dst, const void* buf, size_t bytes, int tag) override;
  void do_recv(int src, void* buf, size_t bytes, int tag) override;
  int do_recv_any(void* buf, size_t bytes, int tag) override;
  void do_sendrecv(int dst, const void* sendbuf, size_t sendbytes, int src, void* recvbuf, size_t recvbytes,
                   int tag) override;
  std::unique_ptr<SendRequest::Pending> do_isend(int dst, const void* buf, size_t bytes, int tag) override;
  void do_exchange(std::span<const SendPiece> sends, std::span<const RecvPiece> recvs) override;
  void check(int rc, const char* call) const;
  std::vector<int> find_nodes() const;
  // Posts a message to dst as MPI_Isend pieces of at most 1 GiB, appending each posted request to reqs.
  void post_sends(int dst, const void* buf, size_t bytes, int tag, std::vector<MPI_Request>& reqs,
                  const char* call) const;
  // Posts the receives, then the sends, then waits once; checks each receive's byte count. `call` names the
  // operation in an error. `source`, when not null, receives the first receive's sender (MPI_ANY_SOURCE's).
  // When it throws, nothing it posted is left to write into the caller's buffers (Unfinished, mpi_comm.cpp).
  void transfer(std::span<const SendPiece> sends, std::span<const RecvPiece> recvs, const char* call,
                int* source = nullptr);
  struct Unfinished;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int poll_sleep_us_ = 0;
  std::vector<int> nodes_;
};

// Completes `reqs` (statuses may be null) with the waiting policy of MpiComm::set_poll_sleep_us (poll_us <= 0:
// MPI_Waitall; else a few immediate MPI_Testall calls, which catch transfers already done, then sleeps of poll_us
// between tests) and returns MPI's error code. MpiComm's waits and the asynchronous parameter server's
// (workloads/train/async_ps.cpp) use it.
int mpi_wait_all(std::vector<MPI_Request>& reqs, MPI_Status* statuses, int poll_us);

// `comm` as the MpiComm it is, for the users that call MPI on its handle; BadInput naming `who` ("reducer
// 'mpi'") and the transport it got otherwise (the thread transport of the tests and `dtbench allreduce`).
MpiComm& require_mpi(Comm& comm, const std::string& who);

}  // namespace dtbench
