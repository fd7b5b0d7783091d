// `dtbench train`: command-line options, MPI set-up and the error policy across ranks.
#include <mpi.h>
#include <unistd.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <CLI/CLI.hpp>
#include <csignal>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <new>

#include "core/cli_checks.hpp"
#include "core/error.hpp"
#include "reducers/mpi_comm.hpp"
#include "reducers/mpi_session.hpp"
#include "workloads/train/stop_signal.hpp"
#include "workloads/train/trainer.hpp"
#include "workloads/train/world.hpp"

namespace dtbench {
namespace {

// Every rank leaves with the same exit code. Under `srun --kill-on-bad-exit=1` the first rank to exit gets its
// peers sent SIGTERM, which would kill one still finishing MPI and turn srun's exit code into 143 (CI saw it once
// for a config error). So each rank ignores SIGTERM, leaving already, and passes a barrier before any exits: no
// rank can be signalled before it ignores it. (Slurm's SIGKILL after KillWait still ends one that would not leave.)
void leave_together() {
  std::signal(SIGTERM, SIG_IGN);
  MPI_Barrier(MPI_COMM_WORLD);
}

// Denormal floats flushed to zero (FTZ) and read as zero (DAZ) in this thread and every thread it starts later, as
// TensorFlow does on CPUs. Denormals cost up to a hundred cycles per operation on Intel cores: claim d's SGD runs at
// lr 0.2 spent 1.89 ms per step in the optimizer (momentum buffers decaying through the denormal range) against
// 0.11 ms with them flushed, on a 2-core Intel Xeon VM, the same accuracy (BENCHMARKS "The main job"). A value below
// 1.2e-38 changes no result that matters; a run stays a function of its config.
void flush_denormals() {
#if defined(__SSE__)
  _mm_setcsr(_mm_getcsr() | 0x8040);  // FTZ (bit 15) and DAZ (bit 6)
#endif
}

// Prints "dtbench: <kind> on rank R of K (host): <what>" and ends every rank of the job with `code`.
[[noreturn]] void abort_job_naming_this_rank(const char* kind, const char* what, ExitCode code) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  std::fprintf(stderr, "dtbench: %s on rank %d of %d (%s): %s\n", kind, rank, size, host, what);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, static_cast<int>(code));
  std::abort();  // MPI_Abort does not return
}

}  // namespace

bool leave_with_the_other_ranks(const std::string& why) {
  if (launched_ranks() < 2) return false;
  // A rank of an MPMD launch that never starts MPI (--help) would leave this one waiting in the agreement for good.
  std::optional<EarlyErrorWatchdog> watchdog(std::in_place, why);
  // mpirun ends the job with SIGTERM when that rank leaves after this one entered MPI_Init ("exiting improperly"),
  // then SIGKILL: train takes SIGTERM on its watcher thread (stop_signal.cpp), where the watchdog's handler never
  // runs, so the watcher says the line (it was lost in 1 of 5 runs of the test, found on a 2-core AMD EPYC VM). One
  // that came during the command line's parsing says it now.
  set_stop_signal_action([&watchdog](int sig) {
    if (sig == SIGTERM) watchdog->say_now_if_armed();
  });
  if (received_stop_signal() == SIGTERM) watchdog->say_now_if_armed();
  struct Unset {
    ~Unset() { set_stop_signal_action(nullptr); }
  } unset;  // before the watchdog goes
  try {
    MpiSession mpi("train");
    // The other ranks may have parsed their command lines (an MPMD launch): they are in train()'s first agreement on
    // errors, and this rank's error joins it there, so that they leave naming it rather than wait for good. When
    // every rank failed (the usual case: mpirun gives them one command line), rank 0 alone prints it.
    const World world;
    try {
      world.agree_on_any_error(BadInput(why));
    } catch (const SameOnAllRanks& e) {
      watchdog->disarm();  // every rank is in the agreement
      if (world.root()) {
        std::fprintf(stderr, "dtbench: error: %s\n", e.what());
        std::fflush(stderr);
      }
    }
    leave_together();
    return true;
  } catch (const Error&) {
    return false;  // MPI would not start: nothing to leave together with
  }
}

void add_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  auto* cmd = app.add_subcommand("train", "Train one run on the ranks of this MPI job (mpirun -np K or srun)");
  cmd->add_option("config", args->config, "Run config (JSON); omit for the defaults")
      ->check(cli::non_empty);  // "" is a mistake ("$CFG" unset), not the defaults: those are the argument left out
  cmd->add_option("--set", args->sets, "Override a key: --set optimizer.lr=0.2 (repeatable)");
  cmd->add_flag("--resume", args->resume,
                "Continue from this run's checkpoint if there is one (else start fresh); a preempted record is "
                "replaced by the resumed run's");
  cmd->add_option("--init-from", args->init_from,
                  "Start from another run's checkpoint folder (weights, optimizer state, step, curve) with this "
                  "config's hyperparameters (population-based training); see output.keep_checkpoint. With --resume: only "
                  "when this run has no checkpoint of its own yet")->check(cli::non_empty);
  cmd->add_option("--stop-at", args->stop_at,
                  "Stop after this many steps (evaluating there), while the schedule and /duration still describe the "
                  "whole run: one interval of population-based training")
      ->check(cli::positive_count);
  cmd->add_flag("--print-config", args->print_config, "Print the fully resolved config and exit");
  cmd->add_option("--baseline", args->baseline, "A record of the same workload on K0 ranks (usually 1), for scaling efficiency (X/K) / (X0/K0) of images/s X")->check(cli::non_empty);
  cmd->add_flag("--mllog-stdout", args->mllog_stdout, "Also print :::MLLOG lines to stdout");
  cmd->add_option("--save-weights", args->save_weights,
                  "Write the final weights then the batch-norm statistics (per-replica ones: their mean) as raw float32 to this file")->check(cli::non_empty);
  cmd->add_option("--trace", args->trace,
                  "Write a per-step timeline of every rank to this file (Chrome trace events: open it in Perfetto or "
                  "chrome://tracing)")->check(cli::non_empty);
  cmd->add_option("--inject-fault", args->inject_fault,
                  "Testing: sigusr1@STEP (signal rank 0 after STEP steps), kill@RANK:STEP (SIGKILL a rank), "
                  "nan-grad@SHARD:STEP (a non-finite gradient in a model-parallel shard, 0 without one, or on rank SHARD in a "
                  "local SGD step) or slow-setup@RANK:MS (a rank MS ms slower to start)")
      ->check(cli::non_empty_value);
  cmd->callback([args] {
    flush_denormals();  // before MPI and OpenMP start their threads, which inherit it
    // (The stop-signal handlers are in place since main's first line: a stop signal during the command line, MPI's
    // start or the config phase is taken as one during set-up, and the run preempts after its first step.)
    // The whole job in this process: a bad config is refused before MPI starts, as train() would refuse it.
    std::optional<ResolvedRun> alone;
    if (alone_in_job()) alone = check_config_alone(*args);
    MpiSession mpi("train");
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int code = 0;
    try {
      code = train(*args, std::move(alone));
    } catch (const Error& e) {
      // Config errors are the same on every rank: rank 0 reports, all exit with the same code.
      if (dynamic_cast<const SameOnAllRanks*>(&e) || size == 1) {
        if (rank == 0) std::fprintf(stderr, "dtbench: error: %s\n", e.what());
        code = static_cast<int>(e.code());
      } else {
        // Anything else may be this rank's alone: name it and end the whole job rather than leave
        // the other ranks waiting in a collective.
        abort_job_naming_this_rank("error", e.what(), e.code());
      }
    } catch (const std::exception& e) {
      // Not one of ours (out of memory, a library's exception): this rank's alone as far as anyone knows. Alone, the
      // top-level handler reports it; among ranks, ending the job is the only way not to leave the others waiting
      // in a collective (and this rank in MPI_Finalize's, waiting for them).
      if (size == 1) throw;
      const bool memory = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
      abort_job_naming_this_rank(memory ? "error" : "internal error", memory ? "out of memory" : e.what(),
                                 ExitCode::run_failed);
    }
    if (code != 0) {
      leave_together();
      throw ExitRequest(code);
    }
  });
}

}  // namespace dtbench
