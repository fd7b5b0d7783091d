// The reducer configurations the tests sweep: every algorithm, plus variants that exercise its options
// (several parameter servers; tiny segments so the segmented paths run on small buffers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reducers/reducer.hpp"

namespace dtbench::test {

struct ReducerCase {
  std::string label;  // unique, usable in a gtest name
  std::string name;   // make_reducer name
  ReducerOptions options;
  int servers_fraction = 0;  // parameter_server: 0 = options.servers as is; k > 0: servers = ceil(ranks / k)
  size_t max_count = SIZE_MAX;  // one-float segments cost a handoff per float: they stop at 1000
  int round_robin_nodes = 0;    // hierarchical: k > 0 places rank r on node r mod k (mpirun --map-by node)
  ReducerOptions for_ranks(int nranks) const {
    ReducerOptions o = options;
    if (servers_fraction > 0) o.servers = (nranks + servers_fraction - 1) / servers_fraction;
    for (int r = 0; round_robin_nodes > 0 && r < nranks; ++r) o.nodes.push_back(r % round_robin_nodes);
    return o;
  }
};

inline std::vector<ReducerCase> reducer_cases(bool with_mpi) {
  ReducerOptions small, single;
  small.segment_bytes = 4096;  // 1024 floats: many segments on every size above 1024
  small.small_transfer_bytes = 0;
  single.segment_bytes = 4;  // one float: segment counts reach chunk lengths, some segments are empty
  single.small_segment_bytes = 4;
  // Hierarchical: every rank on one node (the thread transport's placement; under mpiexec, MpiComm's), nodes
  // of 2 and of 3 consecutive ranks (3 divides few rank counts: a short last node), one rank per node (the
  // leaders' algorithm alone), and round-robin nodes; each with another leader algorithm.
  auto hierarchical = [](int per_node, const std::string& leader) {
    ReducerOptions o;
    o.ranks_per_node = per_node;
    o.leader = leader;
    return o;
  };
  std::vector<ReducerCase> cases = {
      {"parameter_server_1", "parameter_server", {}, 0},
      {"parameter_server_half", "parameter_server", {}, 2},
      {"parameter_server_all", "parameter_server", {}, 1},
      {"tree", "tree", {}, 0},
      {"butterfly", "butterfly", {}, 0},
      {"butterfly_seg4k", "butterfly", small, 0},
      {"butterfly_seg1", "butterfly", single, 0, 1000},
      {"ring", "ring", {}, 0},
      {"ring_seg4k", "ring", small, 0},
      {"ring_seg1", "ring", single, 0, 1000},
      {"halving_doubling", "halving_doubling", {}, 0},
      {"halving_doubling_seg4k", "halving_doubling", small, 0},
      {"halving_doubling_seg1", "halving_doubling", single, 0, 1000},
      {"shared_memory", "shared_memory", {}, 0},
      {"shared_memory_seg4k", "shared_memory", small, 0},  // 1024-float chunks: both slots reused many times
      {"shared_memory_seg1", "shared_memory", single, 0, 1000},  // the smallest chunk, 16 floats
      {"hierarchical_one_node", "hierarchical", {}, 0},
      {"hierarchical_2_per_node_ring", "hierarchical", hierarchical(2, "ring"), 0},
      {"hierarchical_3_per_node_tree", "hierarchical", hierarchical(3, "tree"), 0},
      {"hierarchical_1_per_node_halving_doubling", "hierarchical", hierarchical(1, "halving_doubling"), 0},
      {"hierarchical_round_robin_parameter_server", "hierarchical", hierarchical(0, "parameter_server"), 0, SIZE_MAX, 3},
  };
  if (with_mpi) {
    cases.push_back({"mpi", "mpi", {}, 0});
    // MPI_Allreduce among the node leaders, on a communicator split from MpiComm's (the thread transport has none).
    cases.push_back({"hierarchical_2_per_node_mpi", "hierarchical", hierarchical(2, "mpi"), 0});
    cases.push_back({"hierarchical_round_robin_mpi", "hierarchical", hierarchical(0, "mpi"), 0, SIZE_MAX, 2});
  }
  return cases;
}

// The element counts of the issue (empty, single, below and at small rank counts, odd, prime, 4 MiB),
// plus 4001: 16004 bytes, a small transfer cut into 4 eager segments by the default options.
inline const std::vector<size_t>& check_counts() {
  static const std::vector<size_t> counts = {0, 1, 3, 4, 100, 1000, 4001, 10007, size_t{1} << 20};
  return counts;
}

}  // namespace dtbench::test
