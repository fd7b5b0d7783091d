// Starting programs without a shell: argv goes to posix_spawnp word for word, so nothing in it is
// ever interpreted (sbatch, squeue, scontrol, mpirun).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace dtbench::slurm {

struct ProcessResult {
  int exit_code = -1;  // the exit status, or 128 + signal number when killed by a signal
  std::string out;     // standard output
  std::string err;     // standard error
};

// Runs argv[0] (searched on PATH) with its output captured. Throws RunFailed when it cannot be
// started at all. With own_group, the child leads a process group of its own and starts with no signal blocked
// (sbatch while the sweep holds Ctrl-C back until the job is listed).
ProcessResult run_capture(const std::vector<std::string>& argv, bool own_group = false);

// Runs argv[0] with standard output and error appended to the given files; returns the exit code
// as above. With parent_death_signal (e.g. SIGUSR1) the child gets that signal when this process dies (Linux
// PR_SET_PDEATHSIG), so that it does not outlive a killed campaign. With inherit_fd, that descriptor of this
// process (opened close-on-exec) is the child's too, such as a lock it must hold until it exits.
int run_to_files(const std::vector<std::string>& argv, const std::filesystem::path& out,
                 const std::filesystem::path& err, int parent_death_signal = 0, int inherit_fd = -1);

// The path of the running dtbench binary (/proc/self/exe): what sweeps and reproductions start for their runs.
// Throws RunFailed when it cannot be read.
std::string dtbench_binary();

// True when `program` is an executable found on PATH (or an executable path).
bool on_path(const std::string& program);
// BadInput unless the launcher a run mode needs is on PATH: mpirun for `local`, sbatch for `submit` (sweep, reproduce).
void require_launcher(bool local, bool submit);

}  // namespace dtbench::slurm
