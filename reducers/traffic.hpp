// The exact bytes one allreduce sends and receives on each rank, in closed form. Each algorithm derives
// its own from its run() (the static traffic() of ring.hpp, tree.hpp, ...), reached by name through the
// registry (reducers/registry.hpp). What the Comm counts (Comm::traffic()) equals it byte for byte: the
// reducer tests check that on the thread and MPI transports, and `dtbench allreduce --json` records
// both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "reducers/reducer_options.hpp"

namespace dtbench {

struct RankBytes {
  uint64_t sent = 0;
  uint64_t received = 0;
  bool operator==(const RankBytes&) const = default;
};

// An algorithm's formula: the bytes of each rank (index = rank) in one allreduce of `bytes` (a whole
// number of floats) on `ranks` ranks (>= 1). Segmenting never changes them: segments partition a
// transfer exactly.
using TrafficFormula = std::vector<RankBytes> (*)(int ranks, size_t bytes, const ReducerOptions& options);

// The formula of `reducer` (its registry entry's traffic) for `bytes` on `ranks` ranks; BadInput for an
// unknown reducer, one without a formula (mpi and nccl: their bytes move inside the library), ranks < 1,
// bytes that are not a whole number of floats, or options the reducer refuses (parameter_server:
// servers outside 1..ranks).
std::vector<RankBytes> expected_traffic(const std::string& reducer, int ranks, size_t bytes,
                                        const ReducerOptions& options = {});

}  // namespace dtbench
