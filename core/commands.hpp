// The core subcommands of the dtbench binary: `info` (provenance) and `config` (validate and print a
// resolved run config). Each add_*_command registers its options and a callback that throws
// dtbench::Error on failure; apps/main.cpp maps errors to exit codes.
#pragma once

namespace CLI {
class App;
}

namespace dtbench {
void add_info_command(CLI::App& app);
void add_config_command(CLI::App& app);
}  // namespace dtbench
