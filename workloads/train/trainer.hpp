// dtbench train: one run on K ranks (mpirun or srun), synchronous data parallelism by default.
//
// Each step: every rank makes its shard of the global batch (workloads/data), runs forward and
// backward (workloads/models on the cpu backend), and the gradients are averaged across ranks by the
// configured reducer in buckets that start during backward (buckets.hpp); then every rank applies the
// same optimizer step (optim/), so weights stay identical. Local SGD and post-local SGD (Lin et al.
// 2018) average models every H steps instead; asynchronous SGD runs a parameter server on rank 0
// (async_ps.cpp). A run ends with one record (core/run_record.hpp) and an :::MLLOG file beside it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "workloads/train/fault_injection.hpp"

namespace CLI {
class App;
}

namespace dtbench {

struct TrainArgs {
  std::string config;                // config file; empty = defaults
  std::vector<std::string> sets;     // key.path=value overrides
  bool resume = false;               // continue from this run's checkpoint if there is one
  std::string init_from;             // start from another run's checkpoint folder (run_checkpoint.hpp)
  int64_t stop_at = 0;               // stop after this step, the schedule still spanning /duration; 0 = at the end
  bool print_config = false;         // print the resolved config and exit
  std::string baseline;              // a 1-rank record for scaling efficiency
  bool mllog_stdout = false;         // echo :::MLLOG lines to stdout
  std::string save_weights;          // write the final weights and batch-norm statistics (raw float32) here
  std::string trace;                 // write every rank's timeline here (Chrome trace events, core/trace.hpp)
  // Fault injection for tests of the preemption and failure paths: "sigusr1@STEP" raises SIGUSR1 on
  // rank 0 after STEP steps (as Slurm would send it); "kill@RANK:STEP" kills rank RANK with SIGKILL.
  std::string inject_fault;
};

// Exit codes beyond core/error.hpp's: a preempted run wrote its checkpoint and can be resumed.
inline constexpr int kExitPreempted = 3;

// The run's config resolved on its rank count and checked with the command's options: the part of the set-up that
// needs neither MPI nor data (the rank count, this machine's rules, --inject-fault, --init-from and --stop-at).
struct ResolvedRun {
  Json cfg;
  long per_rank = 0, global = 0;
  FaultInjection fault{""};
};

// Runs the training (MPI must be initialised). Returns the process exit code. `alone`: what check_config_alone
// resolved before MPI started, when this process is the whole job; without it, train() reads and resolves the config.
int train(const TrainArgs& args, std::optional<ResolvedRun> alone = std::nullopt);

// train()'s config phase on one rank, for a process that is the whole job (alone_in_job()): throws the error train()
// would report, attributed to the file or --set, so that `dtbench train` alone refuses a bad config before MPI
// starts (Open MPI's singleton start spawns a daemon and writes a session folder, 0.5-0.7 s here).
ResolvedRun check_config_alone(const TrainArgs& args);

void add_train_command(CLI::App& app);
// For a `dtbench train` command line that fails to parse (`why`): when this process is one of several ranks of
// mpirun or srun, it joins MPI, brings its error to the ranks' first agreement on errors (those that parsed theirs
// are there, in train()), where rank 0 alone prints it, and leaves with the others, as every rank leaving with a
// shared exit code does (train_command.cpp); true then, and every rank exits 2. False when there is no other rank
// or MPI would not start: the caller prints the error.
bool leave_with_the_other_ranks(const std::string& why);

}  // namespace dtbench
