// The reducer module's subcommands of the dtbench binary: `allreduce` (reducers/allreduce_bench.hpp)
// and `model` (reducers/model_command.cpp).
#pragma once

#include <string>
#include <vector>

#include "reducers/allreduce_bench.hpp"

namespace CLI {
class App;
}

namespace dtbench {
void add_allreduce_command(CLI::App& app);
// For a `dtbench allreduce` command line that fails to parse (`why`, CLI11's message): when this process is one of
// several ranks of a launcher, the ranks agree on it in MPI (those that parsed theirs are in their first agreement)
// and rank 0 alone prints it; true then, and the process exits 2. False with one rank or where MPI would not start:
// the caller prints it.
bool say_allreduce_parse_error_once(const std::string& why);
// Parses `args` as `dtbench allreduce`'s arguments for `ranks` ranks of `transport` ("mpi" or "thread") without
// running anything; throws CLI::ParseError for what does not parse and BadInput for a value the run would refuse
// (reproduce checks a claim's allreduce experiments with it before any run); the memory its buffers need on this
// machine only with `on_this_machine` (a report regenerated elsewhere runs nothing). Returns the checked options
// (the sizes the sweep times are sweep_sizes(min_bytes, max_bytes, step_factor)).
AllreduceOptions check_allreduce_args(const std::vector<std::string>& args, const std::string& transport, int ranks,
                                      bool on_this_machine);
void add_model_command(CLI::App& app);
inline void add_reducer_commands(CLI::App& app) {
  add_allreduce_command(app);
  add_model_command(app);
}
}  // namespace dtbench
