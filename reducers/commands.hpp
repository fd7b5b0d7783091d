// The reducer module's subcommands of the dtbench binary: `allreduce` (reducers/allreduce_bench.hpp)
// and `model` (reducers/model_command.cpp).
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dtbench {
void add_allreduce_command(CLI::App& app);
// Parses `args` as `dtbench allreduce`'s arguments without running anything; throws CLI::ParseError (reproduce checks
// a claim's allreduce experiments with it before any run).
void check_allreduce_args(const std::vector<std::string>& args);
void add_model_command(CLI::App& app);
inline void add_reducer_commands(CLI::App& app) {
  add_allreduce_command(app);
  add_model_command(app);
}
}  // namespace dtbench
