// The node layout of a run's ranks, as Comm::nodes() numbers it (reducers/comm.hpp): here, in core, because the
// checkpoint files (core/checkpoint_files) record and check it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace dtbench {

// Where a node layout (the node of each rank) breaks Comm::nodes()'s numbering, 0, 1, ... in the order of each
// node's lowest rank: the first rank whose node is neither an earlier rank's node nor the next number, with that
// next number; nullopt when none does. What every reader of a layout (the hierarchical reducer's options, sweep
// files, checkpoints) checks.
struct MisnumberedNode {
  size_t rank = 0;
  int64_t next = 0;
};
inline std::optional<MisnumberedNode> misnumbered_node(std::span<const int64_t> nodes) {
  int64_t next = 0;
  for (size_t r = 0; r < nodes.size(); ++r) {
    if (nodes[r] == next) ++next;
    else if (nodes[r] < 0 || nodes[r] > next) return MisnumberedNode{r, next};
  }
  return std::nullopt;
}

}  // namespace dtbench
