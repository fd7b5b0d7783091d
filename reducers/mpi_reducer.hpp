// The baseline: the MPI library's own MPI_Allreduce (in place, MPI_FLOAT, MPI_SUM) on the reducer
// communicator. Every other reducer is compared with it. Its algorithm is the library's choice (Open
// MPI's tuned component picks by message size and rank count); Open MPI's algorithms reduce in a fixed
// order for a given rank count and size, which the determinism tests check.
#pragma once

#include "reducers/allreduce.hpp"
#include "reducers/cost_terms.hpp"
#include "reducers/mpi_comm.hpp"

namespace dtbench {

class MpiReducer : public Allreduce {
 public:
  // BadInput unless comm is an MpiComm.
  explicit MpiReducer(Comm& comm);
  std::string name() const override { return "mpi"; }
  void run(float* data, size_t count) override;
  // The alpha-beta-gamma terms of one allreduce (reducers/cost_terms.hpp).
  static CostTerms cost(int ranks, double bytes, const ReducerOptions& options, double eager_bytes);

 private:
  MpiComm* mpi_;
};

}  // namespace dtbench
