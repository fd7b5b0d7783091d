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
// (sbatch while the sweep holds Ctrl-C back until the job is listed). With time_limit_s > 0, a child still running
// after that many seconds is killed (SIGKILL) and its exit code is kTimedOut, its error output saying so: squeue
// hangs while slurmctld is stopped, and a wait must not outlast its --timeout.
constexpr int kTimedOut = 124;  // as timeout(1) returns
ProcessResult run_capture(const std::vector<std::string>& argv, bool own_group = false, double time_limit_s = 0);

// Runs argv[0] with standard output and error appended to the given files; returns the exit code
// as above. With parent_death_signal (e.g. SIGUSR1) the program gets that signal when this process dies (Linux
// PR_SET_PDEATHSIG, on a small guard process between the two that passes it on), and again every second until it
// ends, so that it does not outlive a killed campaign (mpirun passes a signal only to the ranks it has started). With inherit_fd, that descriptor of this
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
// folder, one per user, campaign folder, kind ("sweep", "pbt") and slot (a runner thread or a member; one run at a
// time per slot). In /tmp, whatever OMPI_MCA_orte_tmpdir_base says, and short: Open MPI's Unix sockets live under it
// (a path of at most 108 bytes).
std::string mpi_session_base(const std::filesystem::path& campaign, const std::string& kind, int slot);

// argv run under `env OMPI_MCA_orte_tmpdir_base=BASE` (see mpi_session_base), with Open MPI 4.1's other parameters
// that place the session files emptied (the environment outranks parameter files, and Open MPI reads "" as unset):
// the local and remote bases (mpirun refuses to start when either is set beside the base, from any source: a user's
// mca-params.conf made every run fail) and the top and job-family folders (used as given, whatever the base says).
std::vector<std::string> in_mpi_session(const std::string& base, const std::vector<std::string>& argv);

// The index of the first mpirun argument that sets one of those parameters (its name after --mca, or an
// OMPI_MCA_NAME=VALUE exported with -x), -1 when none does. Runs started here set them themselves (in_mpi_session):
// the command line's would take precedence and have runs side by side share a folder again, or make every mpirun
// refuse to start.
int sets_session_folder(const std::vector<std::string>& mpirun_args);

// Runs side by side each on CPUs of their own. Every mpirun maps its ranks from the host's first core, blind to the
// others and to the affinity it was started with (Open MPI 4.1 binds a job of 1 or 2 ranks to cores): two 1-rank
// runs started at once both ran on CPU 0 while CPU 1 idled. So runner `slot` of `runners` gets a contiguous slice
// of `cpus` (sizes differ by at most one; with more runners than CPUs, CPU slot mod n), as a CPU list ("0-3,8") of
// the kernel's CPU numbers for taskset's --cpu-list (mpirun's --cpu-set would read them as hwloc's logical indices,
// which differ on machines with hyperthreads or several sockets). Within it, `dtbench train`'s `threads` 0 shares
// the slice among the run's ranks (World::default_threads). "" when there is no CPU or one runner.
std::string cpu_slice(const std::vector<int>& cpus, int slot, int runners);
// The CPUs this process may run on (its affinity mask), in increasing order; the online CPUs when that cannot be read.
std::vector<int> affinity_cpu_list();
// True when mpirun arguments already say where the ranks run (--cpu-set, --cpu-list, --bind-to, --map-by, a rank
// file, ...): the user's placement, to which no slice is added.
// `environment`: also the OMPI_MCA_* variables of this process (a run started here inherits them; a job script is
// written here and runs elsewhere, so there only its own arguments count).
bool places_ranks(const std::vector<std::string>& mpirun_args, bool environment = true);
// The CPU lists of `runners` runners side by side (cpu_slice of this process's affinity), taken once: all "" for one
// runner, where `mpirun_args` place the ranks themselves (places_ranks), or without taskset. Sweeps' --jobs and pbt's
// concurrent multi-rank members use them.
std::vector<std::string> runner_cpus(const std::vector<std::string>& mpirun_args, int runners);
// `mpirun -np K` on a runner's CPUs: `taskset --cpu-list CPUS mpirun -np K --bind-to none` (taskset confines mpirun,
// and without its own binding the ranks inherit the mask: Open MPI's binding ignores it, and its --cpu-set takes
// hwloc's logical indices, not the kernel's); plain `mpirun -np K` for "".
std::vector<std::string> mpirun_on(const std::string& cpus, int ranks);

// Whether this machine's mpirun starts every multi-rank launch that `cpus` (runner_cpus) and `ranks` make with
// `mpirun_args`: each distinct launch is tried once with /bin/true as the program, in a session folder under
// `session_base` (removed after). Open MPI 4.1 refuses more ranks than the slots it counts (the cores it may use)
// without --oversubscribe: each run then failed after the campaign was written (exit 1). Returns mpirun's reason for
// the first launch refused for want of slots, "" otherwise (another failure is the runs' to report; a launch onto
// other hosts, --host or a host file, is not tried).
std::string mpirun_slots_refusal(const std::vector<std::string>& cpus, const std::vector<int>& ranks,
                                 const std::vector<std::string>& mpirun_args, const std::string& session_base);

// The last `bytes` bytes of a text file ("..." before them when cut; trailing newlines dropped), "" when it cannot
// be read: the end of a failed run's error output, quoted where the failure is reported.
std::string tail_of(const std::filesystem::path& file, size_t bytes);

// True when `program` is an executable found on PATH (or an executable path).
bool on_path(const std::string& program);
// BadInput unless the launcher a run mode needs is on PATH: mpirun for `local`, sbatch for `submit` (sweep, reproduce).
void require_launcher(bool local, bool submit);

}  // namespace dtbench::slurm
