// The dtbench command line: parses and dispatches, nothing else. Every subcommand lives in its module
// and throws dtbench::Error; this is the one place errors become messages and exit codes:
//   0 ok, 1 the run failed, 2 bad input (config, flags, spec, data files).
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <string>

#include "config/config_command.hpp"
#include "core/cli_checks.hpp"
#include "core/commands.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "workloads/train/stop_signal.hpp"
#include "workloads/train/trainer.hpp"
#include "reducers/commands.hpp"
#include "slurm/sweep.hpp"
#include "analysis/table_command.hpp"
#include "pbt/pbt_command.hpp"
#include "reproduce/reproduce_command.hpp"

namespace {

// One line to stderr in one write: ranks of a job sharing stderr interleaved the pieces of their lines.
void say(const std::string& line) {
  const std::string text = "dtbench: " + line + "\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

// Why standard output did not take what was written to it (a full disk, a closed descriptor), "" when it did. The
// reason is the final flush's; an earlier write's is gone by then (errno was another call's: "No such file").
std::string stdout_failed() {
  errno = 0;
  std::cout.flush();  // (synchronised with stdio: this flushes stdout, where a full disk shows)
  const bool flush_failed = std::fflush(stdout) != 0;
  const int e = errno;
  if (!flush_failed && !std::ferror(stdout) && std::cout) return "";
  return std::string("writing standard output failed") + (e != 0 ? std::string(": ") + std::strerror(e) : "");
}

// Whether the command is a training run, whose result is its record, not what it prints: `train` but for
// `--print-config`, whose printed config is its only result (it warned and exited 0 with it lost; found by a hunt).
bool trains(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "train") return false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--print-config") return false;
    if (a.rfind("--print-config=", 0) == 0) {  // CLI11 reads a flag's value: "=false" trains
      const std::string v = a.substr(15);
      return v == "false" || v == "0" || v == "off" || v == "no";
    }
  }
  return true;
}

// A command that ends with an exit code of its own after printing (table's unreadable records: 1; a preempted
// train: 3) says too when what it printed was lost (it said nothing; found by a hunt): `train`'s result is its
// record, so there a warning.
void say_if_stdout_lost(int argc, char** argv) {
  const std::string why = stdout_failed();
  if (why.empty()) return;
  if (trains(argc, argv)) say("warning: " + why);
  else say("error: " + why);
}

}  // namespace

int main(int argc, char** argv) {
  // A rank of `train` takes SIGUSR1/SIGTERM as a preemption from its first instruction here, not only from its
  // command's start: a launcher's signal during the command-line parsing killed the rank (a hunt saw 1 in 10 runs
  // of a sweep killed 50-90 ms after it started one).
  if (argc > 1 && std::strcmp(argv[1], "train") == 0) dtbench::install_stop_signal_handlers();
  CLI::App app{"dtbench: benchmark and reproducibility harness for distributed data-parallel training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dtbench " DTBENCH_VERSION);
  // commands
  dtbench::add_sweep_command(app);
  dtbench::add_table_command(app);
  dtbench::add_reproduce_command(app);
  dtbench::add_pbt_command(app);
  dtbench::add_reducer_commands(app);
  dtbench::add_info_command(app);
  dtbench::add_config_command(app);
  dtbench::add_train_command(app);
  dtbench::cli::apply_rules(app);

  // CLI11 says only "A subcommand is required" for a misspelt command: name it and list the real ones.
  if (argc > 1 && argv[1][0] != '-' && app.get_subcommands([&](CLI::App* c) { return c->get_name() == argv[1]; }).empty()) {
    std::string names;
    for (const auto* c : app.get_subcommands([](CLI::App*) { return true; })) names += " " + c->get_name();
    say(std::string("error: unknown command '") + argv[1] + "'; commands:" + names);
    return static_cast<int>(dtbench::ExitCode::bad_input);
  }
  // CLI11 answers --version as soon as it meets it and drops the rest: `dtbench --version train` printed the version
  // and exited 0 with the command never run.
  if (argc > 2 && std::strcmp(argv[1], "--version") == 0) {
    say(std::string("error: --version takes nothing after it, got '") + argv[2] + "' (dtbench --help lists the commands)");
    return static_cast<int>(dtbench::ExitCode::bad_input);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version: what they print is their result too
      const int code = app.exit(e);
      return stdout_failed().empty() ? code : (say("error: " + stdout_failed()), static_cast<int>(dtbench::ExitCode::run_failed));
    }
    // The MPI commands' ranks share stderr and mpirun gives them one command line: they agree on the error, and
    // rank 0 alone prints it.
    const std::string command = argc > 1 ? argv[1] : "";
    const std::string why = std::string(e.what()) + " (dtbench " + (command.empty() || command[0] == '-' ? "" : command + " ") +
                            "--help lists the options)";
    if ((command == "train" && dtbench::leave_with_the_other_ranks(why)) ||
        (command == "allreduce" && dtbench::say_allreduce_parse_error_once(why)))
      return static_cast<int>(dtbench::ExitCode::bad_input);
    say("error: " + why);  // as every other error line (CLI11's own has no prefix)
    return static_cast<int>(dtbench::ExitCode::bad_input);
  } catch (const dtbench::ExitRequest& e) {
    say_if_stdout_lost(argc, argv);
    return e.exit_code;
  } catch (const dtbench::Error& e) {
    say(std::string("error: ") + e.what());
    say_if_stdout_lost(argc, argv);
    return static_cast<int>(e.code());
  } catch (const std::bad_alloc&) {
    say("error: out of memory (a config or input larger than this machine holds?)");
    return static_cast<int>(dtbench::ExitCode::run_failed);
  } catch (const std::exception& e) {
    say(std::string("internal error: ") + e.what());
    return static_cast<int>(dtbench::ExitCode::run_failed);
  }
  // What a command printed is its result (a table, a resolved config, the model's predictions): standard output
  // that could not take it (a full disk, a closed descriptor) is a failed run, not a success with the result lost.
  // `train`'s result is its record, not its progress lines: there a warning (a member whose log filled the disk was
  // taken for a failed run, its record complete).
  if (const std::string why = stdout_failed(); !why.empty()) {
    if (trains(argc, argv)) {
      say("warning: " + why + " (the run's record is written)");
      return 0;
    }
    say("error: " + why);
    return static_cast<int>(dtbench::ExitCode::run_failed);
  }
  return 0;
}
