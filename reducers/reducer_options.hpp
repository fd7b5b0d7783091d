// The options every reducer is built with (make_reducer): the parameter server's shard count, the
// hierarchical reducer's leader algorithm and nodes, and the segmenting rule of the ring, butterfly and
// halving_doubling transfers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dtbench {

// Segmenting of the ring, butterfly and halving_doubling transfers (reducers/exchange.hpp): a transfer
// of more than small_transfer_bytes goes as segments of segment_bytes; a smaller one as segments of
// small_segment_bytes. The small rule keeps small messages under MPI's eager limit: Open MPI's
// shared-memory transport sends up to 4 KiB including its header eagerly and anything larger by a
// rendezvous handshake; on the 2-core test machine one 4096-byte message took 3.1-3.6 us against
// 1.3-1.4 us for two 2 KiB ones, and eager segments win for transfers up to about 16 KiB
// (BENCHMARKS.md, "Reducers"). small_transfer_bytes = 0 turns the rule off.
// A segment size as the reducers use it: whole floats, rounded down (below one float: as given, for the caller to
// refuse). allreduce records what ran, and a sweep written before it rounded reads as it ran.
inline size_t whole_float_bytes(size_t bytes) { return bytes < sizeof(float) ? bytes : bytes - bytes % sizeof(float); }

struct ReducerOptions {
  int servers = 1;                         // parameter_server: shard count S, 1 <= S <= ranks
  // hierarchical: the algorithm the node leaders run among themselves, and where the nodes are:
  // ranks_per_node g > 0 puts ranks [k g, (k+1) g) on node k (nodes emulated within one launch); 0 takes
  // `nodes` (the node of each rank) when it is given, else the launcher's placement (Comm::nodes()).
  std::string leader = "ring";
  int ranks_per_node = 0;
  std::vector<int> nodes;
  size_t segment_bytes = size_t{1} << 20;  // segment size of large transfers
  size_t small_segment_bytes = 4032;       // segment size of small transfers (under the eager limit)
  size_t small_transfer_bytes = 16384;     // transfers up to this size count as small
};

}  // namespace dtbench
