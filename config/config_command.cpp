#include "config/config_command.hpp"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/cli_checks.hpp"
#include "config/run_config.hpp"

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
  cmd->callback([o] { std::cout << config::load(o->file, o->sets, o->ranks).dump(2) << "\n"; });
}

}  // namespace dtbench
