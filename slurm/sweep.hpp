// `dtbench sweep SPEC --out DIR [--submit [--wait]] [--local] [--dry-run] [--array]`: validates a
// whole experiment spec, writes the campaign folder (slurm/campaign.hpp) and, when asked, submits
// the runs with sbatch, waits for them, or runs them here with mpirun instead of Slurm.
#pragma once

#include <ostream>
#include <string>

namespace CLI {
class App;
}

namespace dtbench {

struct SweepOptions {
  std::string spec;
  std::string out;
  bool submit = false;   // sbatch every run that is not done (or queued)
  bool wait = false;     // with submit: poll until every submitted job has left the queue
  bool local = false;    // run the points with mpirun on this machine
  int jobs = 1;          // with local: how many runs at once (each its own mpirun)
  bool dry_run = false;  // print the plan and the scripts, write and start nothing
  // With dry_run and submit (or local): also the checks that run makes before it writes, which ask Slurm to judge
  // each request (sbatch --test-only, srun's MPI plugins) or mpirun to count its slots, and write nothing.
  bool check_as_run = false;
  bool array = false;    // job arrays even when the spec does not ask for them
  double poll_seconds = 2;
  double timeout_seconds = 0;  // --wait gives up after this long (0 = never)
};

// Runs a sweep, printing progress to `out`. Throws BadInput for a bad spec or options and
// RunFailed when, after --wait or --local, some run has no complete record.
void run_sweep(const SweepOptions& o, std::ostream& out);

void add_sweep_command(CLI::App& app);

}  // namespace dtbench
