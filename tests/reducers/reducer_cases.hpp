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
  ReducerOptions for_ranks(int nranks) const {
    ReducerOptions o = options;
    if (servers_fraction > 0) o.servers = (nranks + servers_fraction - 1) / servers_fraction;
    return o;
  }
};

inline std::vector<ReducerCase> reducer_cases(bool with_mpi) {
  ReducerOptions small, single;
  small.segment_bytes = 4096;  // 1024 floats: many segments on every size above 1024
  small.small_transfer_bytes = 0;
  single.segment_bytes = 4;  // one float: segment counts reach chunk lengths, some segments are empty
  single.small_segment_bytes = 4;
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
  };
  if (with_mpi) cases.push_back({"mpi", "mpi", {}, 0});
  return cases;
}

// The element counts of the issue (empty, single, below and at small rank counts, odd, prime, 4 MiB),
// plus 4001: 16004 bytes, a small transfer cut into 4 eager segments by the default options.
inline const std::vector<size_t>& check_counts() {
  static const std::vector<size_t> counts = {0, 1, 3, 4, 100, 1000, 4001, 10007, size_t{1} << 20};
  return counts;
}

}  // namespace dtbench::test
