// The core subcommand of the dtbench binary: `info` (provenance); `config` is config/config_command.hpp.
// It registers its options and a callback that throws dtbench::Error on failure; apps/main.cpp maps
// errors to exit codes.
#pragma once

namespace CLI {
class App;
}

namespace dtbench {
void add_info_command(CLI::App& app);
}  // namespace dtbench
