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

// Runs the training (MPI must be initialised). Returns the process exit code. `user`: the user's config as
// check_config_alone read it (read once: the file checked is the file trained on); without it, train() reads it.
int train(const TrainArgs& args, std::optional<Json> user = std::nullopt);

// The checks of train()'s config phase that need neither MPI nor data, for a process that is the whole job
// (alone_in_job()): the config read and resolved on one rank, this machine's rules, the options against it. Throws
// the error train() would report, attributed to the file or --set, so that `dtbench train` alone refuses a bad
// config before MPI starts (Open MPI's singleton start spawns a daemon and writes a session folder, about 0.5 s).
// Returns the user's config as read, for train().
Json check_config_alone(const TrainArgs& args);

void add_train_command(CLI::App& app);
// For a `dtbench train` command line that fails to parse (`why`): when this process is one of several ranks of
// mpirun or srun, it joins MPI, brings its error to the ranks' first agreement on errors (those that parsed theirs
// are there, in train()), where rank 0 alone prints it, and leaves with the others, as every rank leaving with a
// shared exit code does (train_command.cpp); true then, and every rank exits 2. False when there is no other rank
// or MPI would not start: the caller prints the error.
bool leave_with_the_other_ranks(const std::string& why);

}  // namespace dtbench
