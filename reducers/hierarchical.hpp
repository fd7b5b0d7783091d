// Two-level (hierarchical) allreduce: the ranks of each node reduce to their node's leader, the leaders
// allreduce among themselves with any of the flat algorithms, and each leader broadcasts the sum within
// its node. This is the seeds' hierarchical aggregation, and the "hierarchical all-reduce" of Jia et al.
// 2018 ("Highly Scalable Deep Learning Training System with Mixed-Precision", arXiv 1807.11205, section
// 3.3: reduce within groups, ring allreduce among the group masters, broadcast within groups) and of
// Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE: the slow links between nodes carry one buffer per node
// instead of one per rank.
//
// Terms: a node is a set of ranks (ReducerOptions: emulated by ranks_per_node, given as `nodes`, or the
// launcher's placement, Comm::nodes()); its leader is its lowest rank; g the ranks of a node, L the nodes.
// Within a node the leader receives every other rank's buffer in ascending rank order and adds each to
// its own ((x_leader + x_a) + x_b ...: a fixed order), and sends the final sum back to each; the leaders
// run options.leader on a SubComm of the leaders (reducers/sub_comm.hpp), or, for `mpi`, MPI_Allreduce on an
// MPI communicator of the leaders (Horovod's hierarchical allreduce takes that path among its node leaders). The
// order within a node is fixed and every leader ends its allreduce with the same bits (reducers_mpi_check checks
// that for every algorithm, MPI_Allreduce included), so every rank ends with the same bits.
#pragma once

#include <memory>
#include <vector>

#include "reducers/allreduce.hpp"
#include "reducers/cost_terms.hpp"
#include "reducers/scratch.hpp"
#include "reducers/sub_comm.hpp"
#include "reducers/traffic.hpp"

namespace dtbench {

class Hierarchical : public Allreduce {
 public:
  // BadInput for a leader algorithm that cannot run on a subset of the ranks (nccl, hierarchical,
  // shared_memory, an unknown name), `mpi` on another transport than MpiComm, a ranks_per_node < 0, or `nodes`
  // not one entry per rank numbered as Comm::nodes(). With leader `mpi` the constructor is collective (every
  // rank splits the MPI communicator).
  Hierarchical(Comm& comm, const ReducerOptions& options);
  std::string name() const override { return "hierarchical"; }
  void run(float* data, size_t count) override;
  // The exact bytes of each rank (reducers/traffic.hpp), for the nodes the options give (ranks_per_node or
  // nodes; neither: one node).
  static std::vector<RankBytes> traffic(int ranks, size_t bytes, const ReducerOptions& options);
  // The cost formula (reducers/cost_terms.hpp) for the same nodes, on one link: the nodes emulated within one
  // host, as `dtbench allreduce --ranks-per-node` measures them. The critical path runs through the largest
  // node, of g ranks: its leader takes g - 1 whole buffers in, one after the other, and adds each (g - 1
  // messages, (g - 1) n bytes sent and reduced); the L leaders run options.leader on L ranks; the leader sends
  // the sum out g - 1 times (g - 1 messages, (g - 1) n bytes). Within the node two ranks work at once (the
  // leader and the rank it serves), in every node together: 2 x (nodes of more than one rank).
  static CostTerms cost(int ranks, double bytes, const ReducerOptions& options, double eager_bytes);
  // The same path in its two phases: `within` the nodes (the reduce to the leaders and the broadcast back) and
  // `among` the leaders; cost() is their sum. Apart, each phase can be priced with its own parameters: the
  // nodes' link and the network's, or, on one host, the fitted parameters of the algorithms that run them.
  struct CostParts {
    CostTerms within, among;
  };
  static CostParts cost_parts(int ranks, double bytes, const ReducerOptions& options, double eager_bytes);

  // BadInput unless `leader` is a flat host algorithm that runs on a SubComm (parameter_server, tree,
  // butterfly, ring, halving_doubling) or `mpi`, MPI_Allreduce on an MPI communicator of the leaders.
  static void check_leader(const std::string& leader);
  // Those leaders, in registry order (the config schema's choices for /reducer/leader).
  static std::vector<std::string> leader_names();
  // Why `servers` cannot serve a parameter server among `leaders` node leaders, or "" when they
  // can: it has at most one server per leader, as the flat one has at most one per rank. The reducer and the
  // sweep's node rules (config/rules.cpp) both ask this.
  static std::string leader_servers_problem(const std::string& leader, int64_t servers, int64_t leaders);

  // The node of each of `ranks` ranks as the options give it; `comm` (may be null) supplies the launcher's
  // placement when they give none. BadInput as the constructor.
  static std::vector<int> node_layout(int ranks, const ReducerOptions& options, const Comm* comm);

 private:
  std::vector<int> local_;  // the ranks of this rank's node, ascending; local_[0] is its leader
  std::unique_ptr<Comm> leaders_comm_;  // on a leader, when there are several nodes: a SubComm, or an MpiComm for mpi
  std::unique_ptr<Allreduce> leaders_algorithm_;
  Scratch scratch_;
};

}  // namespace dtbench
