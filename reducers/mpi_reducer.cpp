#include "reducers/mpi_reducer.hpp"

#include <algorithm>
#include <climits>

#include "core/error.hpp"

namespace dtbench {

MpiReducer::MpiReducer(Comm& comm) : Reducer(comm), mpi_(dynamic_cast<MpiComm*>(&comm)) {
  if (mpi_ == nullptr)
    throw BadInput("reducer 'mpi' needs the MPI transport (run under mpirun), not the " + comm.transport() +
                   " transport");
}

void MpiReducer::run(float* data, size_t count) {
  // MPI counts are int: reduce huge buffers in pieces.
  const size_t piece = static_cast<size_t>(INT_MAX);
  for (size_t off = 0; off < count; off += piece) {
    const int n = static_cast<int>(std::min(piece, count - off));
    int rc = MPI_Allreduce(MPI_IN_PLACE, data + off, n, MPI_FLOAT, MPI_SUM, mpi_->handle());
    if (rc != MPI_SUCCESS) throw RunFailed("MPI_Allreduce failed on rank " + std::to_string(mpi_->rank()));
  }
}

}  // namespace dtbench
