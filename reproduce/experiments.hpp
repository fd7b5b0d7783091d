// Running a claim's experiments into its report folder: a sweep experiment through the sweep machinery (local
// mpirun, or Slurm; reruns skip finished runs), an allreduce experiment as `dtbench allreduce --json` at each rank
// count (in-process threads, or under mpirun; always on this machine: they take seconds). A run that fails does
// not stop the others: its claim's verdict names it.
#pragma once

#include <filesystem>
#include <ostream>

#include "reproduce/claim.hpp"

namespace dtbench::reproduce {

enum class RunMode { local, submit, dry_run };

struct RunOptions {
  RunMode mode = RunMode::dry_run;
  // With mode dry_run: the mode whose checks the sweeps also make before anything is written (Slurm's judgement of
  // each request under submit, mpirun's slots under local), so that reproduce --submit refuses a claim Slurm would
  // refuse before an earlier claim's jobs ran (found by a hunt).
  RunMode checked_as = RunMode::dry_run;
  bool wait = false;  // with submit
  int jobs = 1;       // with local: a sweep's runs at once
};

// The file an allreduce experiment writes for `ranks` ranks.
std::filesystem::path allreduce_file(const std::filesystem::path& out, const Experiment& e, int ranks);
// That file read and checked as a `dtbench allreduce --json` document of `ranks` ranks (check_sweep_document, and
// its /ranks: another rank count's file copied there counted its bytes for the wrong N); BadInput naming the file
// and the JSON pointer of what is wrong.
Json read_allreduce_file(const std::filesystem::path& file, int ranks);
// Before anything is written: the published files a published experiment copied into `out` earlier (the claim is
// judged on them) still read as JSON. BadInput naming the copy (a damaged one was found by the report, after the
// session was recorded).
void check_published_copies(const Experiment& e, const std::filesystem::path& out);

// Runs (or, with dry_run, prints) the experiment; its output goes to out / e.name. Returns false when something
// did not finish (the message went to `log`).
bool run_experiment(const Experiment& e, const std::filesystem::path& out, const RunOptions& o, std::ostream& log);

}  // namespace dtbench::reproduce
