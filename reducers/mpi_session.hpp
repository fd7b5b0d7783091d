// MpiSession: the RAII owner of MPI_Init_thread and MPI_Finalize.
#pragma once

#include <mpi.h>

#include <string>

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

}  // namespace dtbench
