// MpiSession: the RAII owner of MPI_Init_thread and MPI_Finalize.
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "core/error.hpp"

namespace dtbench {

// Initialises MPI on construction and finalises it on destruction, unless MPI was already initialised
// (then it neither initialises nor finalises). It requests MPI_THREAD_MULTIPLE because a reducer's
// communication thread (Reducer::start, reducers/reducer.hpp) makes MPI calls while the main thread may make others; if the
// library grants less, the constructor throws RunFailed naming both levels.
//
// With a `command` (the dtbench subcommand: "train", "allreduce"), a session that initialised MPI for several ranks
// first agrees with them that every rank runs that command: mpirun's MPMD form can start `train` on some ranks and
// `allreduce` on others, whose first collectives differ, and the job hung for good. When they differ, rank 0 says
// which ranks run which command and every rank ends with exit 2.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv, int required = MPI_THREAD_MULTIPLE, const char* command = nullptr);
  MpiSession() : MpiSession(nullptr, nullptr) {}
  explicit MpiSession(const char* command) : MpiSession(nullptr, nullptr, MPI_THREAD_MULTIPLE, command) {}
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int provided() const { return provided_; }
  static std::string thread_level_name(int level);

 private:
  bool owns_ = false;
  int provided_ = MPI_THREAD_SINGLE;
};

// The rank count the launcher (mpirun, a PMI launcher, MVAPICH's, srun) announces to this process, 1 when none does;
// an MPI launcher's count before Slurm's step size.
int launched_ranks();

// True when this process is the whole job: every launcher's size variable present says one rank (Open MPI, Slurm,
// PMI, MVAPICH), or no launcher started it (none of the variables that mpirun, srun, PMI, PMIx, MVAPICH and Cray
// launchers set is present). A rank of a launcher whose size it cannot read is not taken for a job of one.
bool alone_in_job();

// Says "dtbench: error: <message>" and ends the process with `code` unless disarmed within `seconds`: for a wait
// that another rank may never end. With `on_sigterm`, SIGTERM while armed says it too; one such watchdog at a time
// (it holds the process's SIGTERM handler). Of two armed watchdogs, the first to fire speaks.
class Watchdog {
 public:
  Watchdog(std::string message, int seconds, ExitCode code, bool on_sigterm);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  void disarm();
  // While armed, says the line and ends the process now, as SIGTERM does: for a process that takes SIGTERM on a
  // thread of its own (train's stop-signal watcher), where this watchdog's handler never runs.
  void say_now_if_armed();

 private:
  std::string line_;
  ExitCode code_;
  bool on_sigterm_;
  std::mutex m_;
  std::condition_variable cv_;
  bool disarmed_ = false;
  std::thread thread_;  // started in the constructor's body, once the members above exist
};

// A rank with an error found before MPI started waits for the others to agree on it (allreduce's early errors,
// train's and allreduce's command lines); a rank of the job that never starts MPI (another transport or --help, in
// mpirun's MPMD form) would leave it waiting for good. Unless disarmed within 20 s (once every rank is in MPI), the
// watchdog says the error itself and ends the process with exit 2, as every rank did before the agreement (mpirun
// then ends the job). While armed, SIGTERM (mpirun ending the job because that rank left first) says it too.
class EarlyErrorWatchdog : public Watchdog {
 public:
  explicit EarlyErrorWatchdog(std::string message) : Watchdog(std::move(message), 20, ExitCode::bad_input, true) {}
};

// How long MpiSession waits in MPI_Init under a launcher of several ranks before it gives up: a rank that never
// starts MPI (mpirun's MPMD form with --help, config or info on one rank) left the others there for good when it
// left before they entered MPI_Init (Open MPI ends the job only when it leaves after). DTBENCH_MPI_INIT_TIMEOUT
// (whole seconds, 0: no limit) sets it; 600 s by default (a container image pulled on each node can take minutes
// before the last rank starts). BadInput when it is not a whole number.
int mpi_init_timeout_seconds();

}  // namespace dtbench
