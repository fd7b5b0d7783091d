#include "reducers/reducer_schema.hpp"

#include "reducers/hierarchical.hpp"
#include "reducers/registry.hpp"

namespace dtbench {

config::Node reducer_schema() {
  using namespace config;
  Node name = text("ring");
  for (const ReducerInfo& r : reducer_registry()) name.choices.push_back(r.name);  // every name, once
  Node leader = text("ring", {}, "hierarchical: the algorithm the node leaders run among themselves");
  leader.choices = Hierarchical::leader_names();  // the flat algorithms a SubComm runs, and mpi
  return object({{"name", name},
                 {"servers", integer(1, 1, 1e6, "parameter_server: number of server shards")},
                 {"leader", leader},
                 {"ranks_per_node", integer(0, 0, 1e6,
                                            "hierarchical: nodes of this many consecutive ranks (emulated); 0 = "
                                            "the launcher's nodes (shared memory and SLURM_NODEID)")},
                 // At most 1 TiB: the byte count is a size_t (1e300 was undefined behaviour; a hunt).
                 {"bucket_mib", number(1, 0, 1 << 20, true, false,
                                       "gradient bucket size in MiB, at most 1048576 (PyTorch DDP uses 25; the small "
                                       "CPU models need smaller ones to overlap at all)")},
                 {"overlap", boolean(true, "start each bucket's allreduce during backward")},
                 {"poll_us", integer(0, 0, 100000,
                                     "MPI waits: 0 = block in MPI (polls, busy core); > 0 = test, "
                                     "then sleep this many microseconds between tests")}});
}

}  // namespace dtbench
