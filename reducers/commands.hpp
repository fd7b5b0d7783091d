// The reducer module's subcommands of the dtbench binary: `allreduce` (reducers/allreduce_bench.hpp)
// and `model` (reducers/model_command.cpp).
#pragma once

namespace CLI {
class App;
}

namespace dtbench {
void add_allreduce_command(CLI::App& app);
void add_model_command(CLI::App& app);
inline void add_reducer_commands(CLI::App& app) {
  add_allreduce_command(app);
  add_model_command(app);
}
}  // namespace dtbench
