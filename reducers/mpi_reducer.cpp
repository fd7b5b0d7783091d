#include "reducers/mpi_reducer.hpp"

#include <algorithm>
#include <climits>
#include <vector>

#include "core/error.hpp"
#include "reducers/halving_doubling.hpp"

namespace dtbench {

MpiReducer::MpiReducer(Comm& comm) : Allreduce(comm), mpi_(&require_mpi(comm, "reducer 'mpi'")) {}

void MpiReducer::run(float* data, size_t count) {
  // MPI counts are int: reduce huge buffers in pieces.
  const size_t piece = static_cast<size_t>(INT_MAX);
  for (size_t off = 0; off < count; off += piece) {
    const int n = static_cast<int>(std::min(piece, count - off));
    if (mpi_->poll_sleep_us() <= 0) {
      int rc = MPI_Allreduce(MPI_IN_PLACE, data + off, n, MPI_FLOAT, MPI_SUM, mpi_->handle());
      if (rc != MPI_SUCCESS) throw RunFailed("MPI_Allreduce failed on rank " + std::to_string(mpi_->rank()));
      continue;
    }
    // Sleep-polling (MpiComm::set_poll_sleep_us) needs a request to test: the non-blocking allreduce
    // (Open MPI's libnbc, a different algorithm than the blocking call's).
    std::vector<MPI_Request> req(1);
    int rc = MPI_Iallreduce(MPI_IN_PLACE, data + off, n, MPI_FLOAT, MPI_SUM, mpi_->handle(), req.data());
    if (rc != MPI_SUCCESS) throw RunFailed("MPI_Iallreduce failed on rank " + std::to_string(mpi_->rank()));
    mpi_->wait_all(req, nullptr, "MPI_Iallreduce");
  }
}

CostTerms MpiReducer::cost(int p, double n, const ReducerOptions& o, double eager) {
  // Modelled with Rabenseifner's formula (HalvingDoubling::cost), MPICH's and Open MPI's long-message
  // choice; its own alphas and beta absorb the difference in the fit. It does not segment.
  return HalvingDoubling::cost_terms(p, n, o, eager, false);
}

}  // namespace dtbench
