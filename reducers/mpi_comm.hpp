// MPI transport: a Comm over a duplicate of an MPI communicator, so reducer traffic never matches
// messages of any other MPI user in the program; and MpiSession, the RAII owner of MPI_Init_thread.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "reducers/comm.hpp"

namespace dtbench {

// Initialises MPI on construction and finalises it on destruction, unless MPI was already initialised
// (then it neither initialises nor finalises). It requests MPI_THREAD_MULTIPLE because a reducer's
// communication thread (Reducer::start) makes MPI calls while the main thread may make others; if the
// library grants less, the constructor throws RunFailed naming both levels.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv, int required = MPI_THREAD_MULTIPLE);
  MpiSession() : MpiSession(nullptr, nullptr) {}
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int provided() const { return provided_; }
  static std::string thread_level_name(int level);

 private:
  bool owns_ = false;
  int provided_ = MPI_THREAD_SINGLE;
};

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
  void send(int dst, const void* buf, size_t bytes, int tag) override;
  void recv(int src, void* buf, size_t bytes, int tag) override;
  void sendrecv(int dst, const void* sendbuf, size_t sendbytes, int src, void* recvbuf, size_t recvbytes,
                int tag) override;
  void barrier() override;
  [[noreturn]] void abort(const std::string& reason) override;
  std::string transport() const override { return "mpi"; }

  // The duplicated communicator, for the reducer that calls MPI_Allreduce itself.
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
  void check(int rc, const char* call) const;
  // Posts the receives, then the sends, then waits: MPI_PROC_NULL for a side that is absent.
  void transfer(int dst, const void* sendbuf, size_t sendbytes, int src, void* recvbuf, size_t recvbytes,
                int tag, const char* call);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int poll_sleep_us_ = 0;
};

}  // namespace dtbench
