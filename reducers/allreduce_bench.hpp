// `dtbench allreduce`: an nccl-tests-style sweep of the reducers (time, algbw, busbw, #wrong).
//
// One driver owns everything around the algorithms (as nccl-tests' src/common.cu does): the size
// sweep, warm-up, timing, the cross-rank reduction of the time (max over ranks of the mean time per
// iteration), the correctness check (outside the timed loop: fresh pattern data, one allreduce, count
// of elements whose bits differ from the exact sum) and the output. A reducer supplies only its run
// and its bus factor.
//
// Columns: size (bytes), count (floats), reducer, time (us), algbw = size / time and
// busbw = algbw x bus_factor (GB/s, 1e9 bytes per second, as nccl-tests), #wrong (summed over ranks).
// The JSON rows also carry time_median_us: the median of the per-iteration times (max over ranks), which
// a shared machine's preemptions disturb far less than the mean; the cost model fits it. And "traffic":
// the bytes and messages each rank sent and received in one more allreduce of that size (outside the
// timed loop), as the Comm counted them, with the reducer's exact closed form beside them
// (reducers/traffic.hpp; null for mpi and nccl, whose bytes the Comm does not see).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "reducers/comm.hpp"
#include "reducers/reducer.hpp"

namespace CLI {
class App;
}

namespace dtbench {

struct AllreduceOptions {
  size_t min_bytes = 4096;               // -b
  size_t max_bytes = size_t{64} << 20;   // -e
  double step_factor = 2.0;              // -f
  int iters = 20;                        // -n
  int warmup = 5;                        // -w
  int check_iters = 1;                   // -c
  std::vector<std::string> reducers;     // resolved names (never "all")
  ReducerOptions reducer_options;
  bool async = false;                    // time start()+wait() instead of allreduce()
};

// The largest byte size any option takes: 2^40 (1 TiB), beyond any one buffer a rank holds.
constexpr size_t kMaxBytes = size_t{1} << 40;

// "4096", "4K", "64M", "1G" (K/M/G = 2^10, 2^20, 2^30, as nccl-tests), at most kMaxBytes; BadInput naming
// the option.
size_t parse_bytes(const std::string& text, const std::string& option);

// The most ranks `--transport thread` runs: each rank is a thread of this process with its own stack
// (8 MiB of address space by default), and the sweep gives every rank its buffers; beyond this, use MPI.
constexpr int kMaxThreadRanks = 256;

// The most sizes one sweep times (OSU's and nccl-tests' default sweeps have some 20-30).
constexpr size_t kMaxSweepSizes = 10000;
// The sweep sizes: min, min*f, min*f^2, ... <= max, each rounded down to whole floats, without repeats. BadInput
// naming -f when there would be more than kMaxSweepSizes (a factor just above 1 gave millions: a sweep for good).
std::vector<size_t> sweep_sizes(size_t min_bytes, size_t max_bytes, double factor);

// "all", a name, or a comma-separated list; "all" means every reducer the launch supports (mpi only on
// MPI, shared_memory only when every rank is on one node). BadInput for an unknown name.
std::vector<std::string> resolve_reducers(const std::string& spec, bool mpi_transport, bool one_node = true);

// Checks the options (sizes in order, factor > 1, counts >= 0 / >= 1); BadInput naming the flag.
void validate(const AllreduceOptions& o);

// Runs the sweep on every rank of comm (collective). Rank 0 prints the table to `table` when non-null.
// Returns, on every rank, {"ranks", "transport", "rows": [...], "reduction": [...], "wrong"}: the rows
// with the columns above, and the local reduction kernel timed at each size (the cost model's gamma).
Json run_allreduce_sweep(Comm& comm, const AllreduceOptions& o, std::ostream* table);

// Registers the `allreduce` subcommand (it initialises MPI itself; --transport thread runs the ranks
// as threads instead, without mpirun).
void add_allreduce_command(CLI::App& app);

}  // namespace dtbench
