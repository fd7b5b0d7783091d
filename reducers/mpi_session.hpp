// MpiSession: the RAII owner of MPI_Init_thread and MPI_Finalize.
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace dtbench {

// Initialises MPI on construction and finalises it on destruction, unless MPI was already initialised
// (then it neither initialises nor finalises). It requests MPI_THREAD_MULTIPLE because a reducer's
// communication thread (Reducer::start, reducers/reducer.hpp) makes MPI calls while the main thread may make others; if the
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

// The rank count the launcher (mpirun, srun, another PMI launcher) announces to this process, 1 when none does.
int launched_ranks();

// A rank with an error found before MPI started waits for the others to agree on it (allreduce's early errors,
// train's and allreduce's command lines); a rank of the job that never starts MPI (another transport or --help, in
// mpirun's MPMD form) would leave it waiting for good. Unless disarmed within 20 s (once every rank is in MPI), the
// watchdog says the error itself and ends the process with exit 2, as every rank did before the agreement (mpirun
// then ends the job). While armed, SIGTERM (mpirun ending the job because that rank left first) says it too. One
// watchdog at a time: it holds the process's SIGTERM handler.
class EarlyErrorWatchdog {
 public:
  explicit EarlyErrorWatchdog(std::string message);
  ~EarlyErrorWatchdog();
  EarlyErrorWatchdog(const EarlyErrorWatchdog&) = delete;
  EarlyErrorWatchdog& operator=(const EarlyErrorWatchdog&) = delete;
  void disarm();

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool disarmed_ = false;
  std::thread thread_;  // started in the constructor's body, once the members above exist
};

}  // namespace dtbench
