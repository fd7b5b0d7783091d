#include "reducers/mpi_session.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace dtbench {
namespace {

// Marks every descriptor this process inherited (above stderr) close-on-exec. MPI_Init in a process that no
// launcher started (a singleton, as `dtbench pbt` runs its 1-rank members) forks and execs Open MPI's daemon
// (orted), which outlives the process by some milliseconds (measured: 10 ms idle, more under load) and would hold
// what the process was given past its end: a PBT campaign's folder lock, so that a rerun right after the campaign
// was refused as if members still worked there. The process itself keeps its descriptors.
void keep_inherited_descriptors_from_exec() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return;  // no procfs: nothing is marked (the daemon then holds them as before)
  const int own = ::dirfd(d);
  while (const dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd <= 2 || fd == own) continue;
    const int flags = ::fcntl(static_cast<int>(fd), F_GETFD);
    if (flags >= 0) ::fcntl(static_cast<int>(fd), F_SETFD, flags | FD_CLOEXEC);
  }
  ::closedir(d);
}

}  // namespace

std::string MpiSession::thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "unknown (" + std::to_string(level) + ")";
  }
}

namespace {

// The job sizes launchers give their ranks: Open MPI's, PMI's (MPICH, Intel MPI, srun --mpi=pmi2), MVAPICH's, then
// Slurm's step size. Launchers nest: MPICH's mpiexec in a Slurm allocation starts its proxy on a node with srun, so
// on one node its 4 ranks see SLURM_STEP_NUM_TASKS=1 beside PMI_SIZE=4: an MPI launcher's own size comes first.
constexpr const char* kLauncherSizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE",
                                          "SLURM_STEP_NUM_TASKS"};

}  // namespace

int launched_ranks() {
  for (const char* var : kLauncherSizes)
    if (const char* v = std::getenv(var)) return std::max(1, std::atoi(v));
  return 1;
}

bool alone_in_job() {
  bool sized = false;  // every size present must say 1 (nested launchers)
  for (const char* var : kLauncherSizes)
    if (const char* v = std::getenv(var)) {
      if (std::string(v) != "1") return false;
      sized = true;
    }
  if (std::getenv("ALPS_APP_PE") != nullptr) return false;  // Cray's aprun: no size variable to read
  if (sized) return true;
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(var) != nullptr) return false;
  return true;
}

namespace {

// The SIGTERM watchdog's line, for its handler; whichever watchdog comes first says its line, once.
std::string term_line;
std::atomic<bool> watchdog_said{false};
struct sigaction watchdog_previous_term {};

[[noreturn]] void say_and_leave(const std::string& line, ExitCode code) {
  if (!watchdog_said.exchange(true)) {
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {  // write(2) is async-signal-safe, stdio is not
      const ssize_t n = ::write(STDERR_FILENO, p, left);
      if (n <= 0) break;
      p += n, left -= size_t(n);
    }
  }
  ::_exit(static_cast<int>(code));
}

void on_term_while_armed(int) { say_and_leave(term_line, ExitCode::bad_input); }

}  // namespace

Watchdog::Watchdog(std::string message, int seconds, ExitCode code, bool on_sigterm)
    : line_("dtbench: error: " + message + "\n"), code_(code), on_sigterm_(on_sigterm) {
  if (on_sigterm_) {
    // A rank of the job that never starts MPI and leaves before this one entered MPI_Init has mpirun end the job
    // ("exiting improperly") with SIGTERM to this rank: the line is said then too, not lost (mpirun's exit code is
    // its own, 1, then).
    term_line = line_;
    struct sigaction term {};
    term.sa_handler = on_term_while_armed;
    sigemptyset(&term.sa_mask);
    ::sigaction(SIGTERM, &term, &watchdog_previous_term);
  }
  thread_ = std::thread([this, seconds, code] {
    std::unique_lock<std::mutex> lock(m_);
    if (cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return disarmed_; })) return;
    say_and_leave(line_, code);
  });
}

Watchdog::~Watchdog() {
  disarm();
  thread_.join();
}

void Watchdog::say_now_if_armed() {
  {
    const std::lock_guard<std::mutex> lock(m_);
    if (disarmed_) return;
  }
  say_and_leave(line_, code_);
}

void Watchdog::disarm() {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (disarmed_) return;
    disarmed_ = true;
  }
  if (on_sigterm_) ::sigaction(SIGTERM, &watchdog_previous_term, nullptr);
  cv_.notify_all();
}

int mpi_init_timeout_seconds() {
  const char* v = std::getenv("DTBENCH_MPI_INIT_TIMEOUT");
  if (v == nullptr) return 600;
  char* end = nullptr;
  errno = 0;
  const long s = std::strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || errno != 0 || s < 0 || s > 86400)
    throw BadInput(std::string("DTBENCH_MPI_INIT_TIMEOUT: expected whole seconds in [0, 86400], got '") + v + "'");
  return static_cast<int>(s);
}

namespace {

// Every rank's command, gathered; on a difference rank 0 says who runs what ("ranks 0-1 'dtbench train', rank 2
// 'dtbench allreduce'") and every rank leaves with exit 2 (the same decision on all: each sees every command).
void agree_on_command(const char* command) {
  constexpr size_t kTag = 32;
  char mine[kTag] = {};
  std::snprintf(mine, kTag, "%s", command);
  int size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (size < 2) return;
  std::vector<char> all(kTag * static_cast<size_t>(size));
  MPI_Allgather(mine, static_cast<int>(kTag), MPI_CHAR, all.data(), static_cast<int>(kTag), MPI_CHAR, MPI_COMM_WORLD);
  auto tag = [&](int r) { return std::string(all.data() + kTag * static_cast<size_t>(r)); };
  bool same = true;
  for (int r = 1; r < size; ++r) same = same && tag(r) == tag(0);
  if (same) return;
  if (rank == 0) {
    std::string said;  // runs of consecutive ranks with one command
    for (int first = 0; first < size;) {
      int last = first;
      while (last + 1 < size && tag(last + 1) == tag(first)) ++last;
      const std::string who = first == last ? "rank " + std::to_string(first)
                                            : "ranks " + std::to_string(first) + "-" + std::to_string(last);
      said += (said.empty() ? "" : ", ") + who + " 'dtbench " + tag(first) + "'";
      first = last + 1;
    }
    std::fprintf(stderr, "dtbench: error: the ranks of this job run different commands (%s); every rank must run the "
                 "same one (mpirun's MPMD form)\n", said.c_str());
    std::fflush(stderr);
  }
  MPI_Finalize();
  std::_Exit(static_cast<int>(ExitCode::bad_input));
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv, int required, const char* command) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    MPI_Query_thread(&provided_);
  } else {
    keep_inherited_descriptors_from_exec();
    std::optional<Watchdog> waiting;
    if (const int limit = mpi_init_timeout_seconds(); limit > 0 && launched_ranks() >= 2)
      waiting.emplace("MPI_Init did not finish within " + std::to_string(limit) + " s: a rank of this job did not "
                      "start MPI (mpirun's MPMD form with --help, config or info on one rank?), or the launcher "
                      "cannot connect the ranks (DTBENCH_MPI_INIT_TIMEOUT sets the wait, 0 for none)",
                      limit, ExitCode::run_failed, false);
    if (MPI_Init_thread(argc, argv, required, &provided_) != MPI_SUCCESS)
      throw RunFailed("MPI_Init_thread failed");
    owns_ = true;
  }
  if (provided_ < required) {
    std::string msg = "MPI provides " + thread_level_name(provided_) + " but " + thread_level_name(required) +
                      " is required (a reducer's communication thread calls MPI while the main thread may too)";
    if (owns_) MPI_Finalize();
    owns_ = false;
    throw RunFailed(msg);
  }
  if (owns_ && command != nullptr) agree_on_command(command);
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace dtbench
