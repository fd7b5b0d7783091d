// `dtbench config`: validate a run config and print it with every default resolved. Registers its
// options and a callback that throws dtbench::Error on failure; apps/main.cpp maps errors to exit codes.
#pragma once

namespace CLI {
class App;
}

namespace dtbench {
void add_config_command(CLI::App& app);
}  // namespace dtbench
