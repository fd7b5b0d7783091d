#include "reducers/mpi_session.hpp"

#include "core/error.hpp"

namespace dtbench {

std::string MpiSession::thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "unknown (" + std::to_string(level) + ")";
  }
}

MpiSession::MpiSession(int* argc, char*** argv, int required) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    MPI_Query_thread(&provided_);
  } else {
    if (MPI_Init_thread(argc, argv, required, &provided_) != MPI_SUCCESS)
      throw RunFailed("MPI_Init_thread failed");
    owns_ = true;
  }
  if (provided_ < required) {
    std::string msg = "MPI provides " + thread_level_name(provided_) + " but " + thread_level_name(required) +
                      " is required (a reducer's communication thread calls MPI while the main thread may too)";
    if (owns_) MPI_Finalize();
    owns_ = false;
    throw RunFailed(msg);
  }
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace dtbench
