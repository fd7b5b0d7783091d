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

// Open MPI 4.1 keeps every job's session files in one folder per host and user (/tmp/ompi.<host>.<uid>) and removes
// it when the last job on the host ends; an mpirun starting at that moment cannot create its own folder in it and
// fails in orte_init within a tenth of a second (open-mpi/ompi#8510). Runs started side by side (a sweep's --jobs,
// a population's members) therefore each get a session base of their own: `OMPI_MCA_orte_tmpdir_base=` this
// folder, one per campaign folder, kind ("sweep", "pbt") and slot (a runner thread or a member; one run at a time
// per slot). Short and in /tmp because Open MPI's Unix sockets live under it (a path of at most 108 bytes).
std::string mpi_session_base(const std::filesystem::path& campaign, const std::string& kind, int slot);

// argv run under `env OMPI_MCA_orte_tmpdir_base=BASE` (see mpi_session_base), and OMP_NUM_THREADS=omp_threads
// when that is above 0 (cpu_share).
std::vector<std::string> in_mpi_session(const std::string& base, const std::vector<std::string>& argv,
                                        int omp_threads = 0);

// The OpenMP threads for each rank of a run of `ranks` ranks when `concurrent` such runs are started side by side
// here: this process's CPUs (its affinity mask) divided among them all, at least 1; 0 when there is nothing to
// divide (one run at a time: `dtbench train`'s `threads` 0 shares the CPUs among one job's ranks itself) or when
// OMP_NUM_THREADS is set here (the user's choice, which the runs inherit). Without it, each of N concurrent runs
// took every CPU: N times as many threads as cores (a sweep of 2 runs, --jobs 2: 3.45x the wall time, BENCHMARKS.md).
int cpu_share(int concurrent, int ranks);
// The CPUs this process may run on (its affinity mask; the online CPUs when that cannot be read).
int affinity_cpus();

// The last `bytes` bytes of a text file ("..." before them when cut; trailing newlines dropped), "" when it cannot
// be read: the end of a failed run's error output, quoted where the failure is reported.
std::string tail_of(const std::filesystem::path& file, size_t bytes);

// True when `program` is an executable found on PATH (or an executable path).
bool on_path(const std::string& program);
// BadInput unless the launcher a run mode needs is on PATH: mpirun for `local`, sbatch for `submit` (sweep, reproduce).
void require_launcher(bool local, bool submit);

}  // namespace dtbench::slurm
