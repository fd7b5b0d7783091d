#include "config/config_command.hpp"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/cli_checks.hpp"
#include "config/rules.hpp"
#include "config/run_config.hpp"
#include "core/error.hpp"

namespace dtbench {

void add_config_command(CLI::App& app) {
  struct Opts {
    std::string file;
    std::vector<std::string> sets;
    int ranks = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("config", "Validate a run config and print it with every default resolved");
  cmd->add_option("file", o->file, "Run config (JSON); omit for the defaults")
      ->check(cli::non_empty);  // "" is a mistake ("$CFG" unset), not the defaults: those are the argument left out
  cmd->add_option("--set", o->sets, "Override a key: --set optimizer.momentum=0.95 (repeatable)");
  cmd->add_option("--ranks", o->ranks, "Rank count for the rules that depend on it (e.g. batch divisibility); 0, the default: those rules are skipped")
      ->check(cli::non_negative);
  cmd->callback([o] {
    const Json resolved = config::load(o->file, o->sets, o->ranks);
    // The node rules `train` applies too, where the config alone fixes the nodes (found by a hunt: a hierarchical
    // parameter server with more servers than /reducer/ranks_per_node's leaders passed here, and `train` refused it).
    // Launcher-given nodes are not known here: such a config is checked by the sweep that places it, and by `train`.
    const Json& red = resolved["reducer"];
    if (o->ranks > 0 && !(red["name"] == "hierarchical" && red["ranks_per_node"].get<int64_t>() == 0)) {
      try {
        config::check_node_rules(resolved, o->ranks, 1);
      } catch (const BadInput& e) {
        throw BadInput(config::attributed(e.what(), o->file, o->sets));
      }
    }
    std::cout << resolved.dump(2) << "\n";
  });
}

}  // namespace dtbench
