// The reducer registry: every name the config's /reducer/name accepts, registered once with its kind,
// bus-bandwidth factor, cost formula, traffic formula and factory. The config schema, make_reducer,
// `dtbench allreduce --reducer all`, the cost model and expected_traffic all read it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "reducers/allreduce.hpp"
#include "reducers/comm.hpp"
#include "reducers/cost_terms.hpp"
#include "reducers/reducer_options.hpp"
#include "reducers/traffic.hpp"

namespace dtbench {

enum class ReducerKind {
  kHost,          // runs on host buffers on any machine: what `--reducer all` means
  kGpuOnly,       // needs a CUDA build and a device (nccl)
  kAsynchronous,  // not an allreduce: the trainer's asynchronous parameter-server loop
};

// Builds the algorithm; BadInput for options out of range or a missing transport or device.
using AllreduceFactory = std::unique_ptr<Allreduce> (*)(Comm& comm, const ReducerOptions& options);

struct ReducerInfo {
  std::string name;
  ReducerKind kind;
  double (*bus_factor)(int nranks);  // busbw = algbw x bus_factor(ranks)
  CostFormula cost;                  // nullptr: the cost model has no formula for it
  TrafficFormula traffic;            // nullptr: its bytes do not move through the Comm (mpi, shared_memory, nccl)
  AllreduceFactory make;             // nullptr: not built by make_reducer (asynchronous)
};

// Every reducer, in a fixed order: parameter_server, tree, butterfly, ring, halving_doubling, hierarchical,
// shared_memory, mpi, nccl, async_parameter_server.
const std::vector<ReducerInfo>& reducer_registry();

// The entry of `name`; nullptr when there is none.
const ReducerInfo* find_reducer(const std::string& name);
// The entry of `name`; BadInput (listing the valid names) when there is none.
const ReducerInfo& reducer_info(const std::string& name);

// The host reducer names, in registry order: parameter_server, tree, butterfly, ring, halving_doubling, hierarchical,
// shared_memory, mpi (what `--reducer all` means).
const std::vector<std::string>& reducer_names();

// Builds the algorithm of `name` with the registry's factory; the errors of make_reducer (reducer.hpp).
std::unique_ptr<Allreduce> make_allreduce(const std::string& name, Comm& comm, const ReducerOptions& options = {});

}  // namespace dtbench
