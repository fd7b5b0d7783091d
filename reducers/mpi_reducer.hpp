// The baseline: the MPI library's own MPI_Allreduce (in place, MPI_FLOAT, MPI_SUM) on the reducer
// communicator. Every other reducer is compared with it. Its algorithm is the library's choice (Open
// MPI's tuned component picks by message size and rank count); Open MPI's algorithms reduce in a fixed
// order for a given rank count and size, which the determinism tests check.
#pragma once

#include "reducers/mpi_comm.hpp"
#include "reducers/reducer.hpp"

namespace dtbench {

class MpiReducer : public Reducer {
 public:
  // BadInput unless comm is an MpiComm.
  explicit MpiReducer(Comm& comm);
  ~MpiReducer() override { stop_comm_thread(); }
  std::string name() const override { return "mpi"; }
  double bus_factor(int nranks) const override { return allreduce_bus_factor(nranks); }

 protected:
  void run(float* data, size_t count) override;

 private:
  MpiComm* mpi_;
};

}  // namespace dtbench
