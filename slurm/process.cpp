#include "slurm/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include "core/error.hpp"

extern char** environ;

namespace dtbench::slurm {
namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> v;
  for (const auto& a : argv) v.push_back(const_cast<char*>(a.c_str()));
  v.push_back(nullptr);
  return v;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// The absolute path of `program` as execvp would find it ("" when none): resolved before fork, so that the
// child only makes async-signal-safe calls.
std::string find_program(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::filesystem::path candidate = std::filesystem::path(dir.empty() ? std::string(".") : dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

// The guard's mark (run_tied_to_parent): set by the parent-death signal, which SIGALRM's repeats then pass on.
volatile sig_atomic_t g_guard_marked = 0;
extern "C" void guard_mark(int sig) {
  if (sig != SIGALRM) g_guard_marked = 1;
}

// run_to_files with PR_SET_PDEATHSIG or an inherited descriptor: posix_spawn can set neither, so fork and exec by
// hand. The signal comes when the thread that forked ends, which here outlives the child (it waits for it). With a
// signal, the child leads its own process group and reads nothing from the terminal: a terminal's Ctrl-C (SIGINT to
// the foreground group) then reaches only this process, whose death sends the child `signal` (a pbt member then
// checkpoints), where SIGINT killed the members outright; and a background group reading the terminal would stop.
int run_tied_to_parent(const std::vector<std::string>& argv, const std::filesystem::path& out,
                       const std::filesystem::path& err, int signal, int inherit_fd) {
  const std::string exe = find_program(argv[0]);
  if (exe.empty()) throw RunFailed(argv[0] + ": cannot start: not found on PATH");
  const int fd_out = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int fd_err = ::open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_out < 0 || fd_err < 0) {
    const int e = errno;
    if (fd_out >= 0) ::close(fd_out);
    if (fd_err >= 0) ::close(fd_err);
    throw RunFailed((fd_out < 0 ? out : err).string() + ": cannot open: " + std::strerror(e));
  }
  const int fd_in = signal != 0 ? ::open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
  auto args = c_argv(argv);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {  // the child: async-signal-safe calls only
    // With a signal, the child is a guard that runs the program as its own child and passes the signal on to it,
    // again every second until it ends: once was not enough, since mpirun passes a signal only to the ranks it has
    // started (a sweep killed just after starting a run left that run training to its end, holding the folder's
    // lock; found by a hunt). Its handlers only mark; the program starts with the signals' defaults (execve).
    if (signal != 0) {
      struct sigaction mark = {};
      mark.sa_handler = guard_mark;  // no SA_RESTART: waitpid below returns EINTR
      sigemptyset(&mark.sa_mask);
      if (::sigaction(signal, &mark, nullptr) != 0 || ::sigaction(SIGALRM, &mark, nullptr) != 0) ::_exit(127);
      sigset_t both;
      sigemptyset(&both);
      sigaddset(&both, signal);
      sigaddset(&both, SIGALRM);
      if (::sigprocmask(SIG_UNBLOCK, &both, nullptr) != 0) ::_exit(127);
    }
    if (::prctl(PR_SET_PDEATHSIG, signal) != 0 || ::getppid() != parent) ::_exit(127);  // parent already gone
    if (signal != 0 && (::setpgid(0, 0) != 0 || fd_in < 0 || ::dup2(fd_in, 0) < 0)) ::_exit(127);
    if (inherit_fd >= 0 && ::fcntl(inherit_fd, F_SETFD, 0) != 0) ::_exit(127);  // kept across execve
    if (::dup2(fd_out, 1) < 0 || ::dup2(fd_err, 2) < 0) ::_exit(127);
    if (signal == 0) {
      ::execve(exe.c_str(), args.data(), environ);
      ::_exit(127);
    }
    const pid_t run = ::fork();
    if (run == 0) {
      ::execve(exe.c_str(), args.data(), environ);
      ::_exit(127);
    }
    if (run < 0) ::_exit(127);
    // Woken every second (SIGALRM) as well as by the signal: a signal that came before waitpid was entered (a loaded
    // machine may not run the guard for a while after its fork) would otherwise leave it waiting for good, and the
    // run training on (pbt.campaign's Ctrl-C case, once in a fresh clone's suite).
    int status = 0;
    ::alarm(1);
    for (;;) {
      if (::waitpid(run, &status, 0) == run) break;
      if (errno != EINTR) ::_exit(127);
      if (g_guard_marked != 0) ::kill(run, signal);  // the parent is gone: pass the signal on, and again in a second
      ::alarm(1);
    }
    ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 127);
  }
  const int e = errno;
  ::close(fd_out);
  ::close(fd_err);
  if (fd_in >= 0) ::close(fd_in);
  if (pid < 0) throw RunFailed(argv[0] + ": cannot start: " + std::strerror(e));
  return wait_for(pid);
}

}  // namespace

namespace {
// A time-limited program leads a process group of its own (run_capture), which the terminal's Ctrl-C does not reach:
// while one runs, the stop signals kill its group first, then take their earlier action (a hunt: Ctrl-C during a
// hung squeue left it running after dtbench had gone).
std::atomic<pid_t> g_limited_group{0};
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_stop_before[3];

void end_limited_group(int sig) {
  if (const pid_t g = g_limited_group.load(); g > 0) ::kill(-g, SIGKILL);
  for (int i = 0; i < 3; ++i)
    if (kStopSignals[i] == sig) ::sigaction(sig, &g_stop_before[i], nullptr);
  ::raise(sig);
}

// Installs end_limited_group for the stop signals while it lives (one time-limited program at a time).
class LimitedGroupGuard {
 public:
  LimitedGroupGuard() {
    struct sigaction a {};
    a.sa_handler = end_limited_group;
    sigemptyset(&a.sa_mask);
    // A signal this process ignores (a background job's SIGINT, nohup's SIGHUP) stays ignored.
    for (int i = 0; i < 3; ++i) {
      ::sigaction(kStopSignals[i], nullptr, &g_stop_before[i]);
      if (g_stop_before[i].sa_handler != SIG_IGN) ::sigaction(kStopSignals[i], &a, nullptr);
    }
  }
  ~LimitedGroupGuard() {
    g_limited_group.store(0);
    for (int i = 0; i < 3; ++i) ::sigaction(kStopSignals[i], &g_stop_before[i], nullptr);
  }
  LimitedGroupGuard(const LimitedGroupGuard&) = delete;
  LimitedGroupGuard& operator=(const LimitedGroupGuard&) = delete;
};
}  // namespace

ProcessResult run_capture(const std::vector<std::string>& argv, bool own_group, double time_limit_s) {
  std::optional<LimitedGroupGuard> guard;
  if (!own_group && time_limit_s > 0) guard.emplace();  // before the spawn: no moment without it
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)
    throw RunFailed(argv[0] + ": cannot create pipes: " + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  // own_group: a process group of its own (the terminal's Ctrl-C does not reach it) and no signal held back (this
  // thread's may be), so that it finishes what it started and can still be stopped on its own.
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  if (own_group) {
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  } else if (time_limit_s > 0) {
    // A group of its own, so that the kill reaches what it started too (a site's squeue is often a wrapper script).
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  }
  pid_t pid = 0;
  auto args = c_argv(argv);
  int rc = ::posix_spawnp(&pid, argv[0].c_str(), &fa, &at, args.data(), environ);
  if (rc == 0 && guard) g_limited_group.store(pid);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw RunFailed(argv[0] + ": cannot start: " + std::strerror(rc));
  }
  ProcessResult r;
  // Read both pipes until both close, so neither can fill up and block the child.
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_count = 2;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(time_limit_s);
  bool timed_out = false;
  while (open_count > 0) {
    int wait_ms = -1;
    if (time_limit_s > 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        // (The limit covers the output: a child that closed both pipes and runs on is waited for below.)
        ::kill(-pid, SIGKILL);  // the child leads its group (above)
        timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(std::min<long long>(left.count(), 1000));
    }
    const int ready = ::poll(fds, 2, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (ready == 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  r.exit_code = wait_for(pid);
  if (timed_out) {
    r.exit_code = kTimedOut;
    char said[96];
    std::snprintf(said, sizeof said, "no answer within %g s (killed)", std::round(time_limit_s * 10) / 10);
    r.err += (r.err.empty() || r.err.back() == '\n' ? "" : "\n") + std::string(said);
  }
  return r;
}

int run_to_files(const std::vector<std::string>& argv, const std::filesystem::path& out,
                 const std::filesystem::path& err, int parent_death_signal, int inherit_fd) {
  if (parent_death_signal != 0 || inherit_fd >= 0)
    return run_tied_to_parent(argv, out, err, parent_death_signal, inherit_fd);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t pid = 0;
  auto args = c_argv(argv);
  int rc = ::posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw RunFailed(argv[0] + ": cannot start: " + std::strerror(rc));
  return wait_for(pid);
}

std::string mpi_session_base(const std::filesystem::path& campaign, const std::string& kind, int slot) {
  char hash[16];
  std::snprintf(hash, sizeof hash, "%012llx",
                static_cast<unsigned long long>(std::hash<std::string>{}(campaign.string()) & 0xffffffffffffULL));
  char n[8];
  std::snprintf(n, sizeof n, "%02d", slot);
  return "/tmp/dtbench-" + kind + "-" + std::to_string(::getuid()) + "-" + hash + "-" + n;
}

namespace {
// Open MPI 4.1's parameters that decide where a job's session files go; the base first (in_mpi_session).
const char* const kSessionParams[] = {"orte_tmpdir_base", "orte_local_tmpdir_base", "orte_remote_tmpdir_base",
                                      "orte_top_session_dir", "orte_jobfam_session_dir"};
}  // namespace

std::vector<std::string> in_mpi_session(const std::string& base, const std::vector<std::string>& argv) {
  std::vector<std::string> out = {"env", "OMPI_MCA_" + std::string(kSessionParams[0]) + "=" + base};
  for (size_t i = 1; i < std::size(kSessionParams); ++i) out.push_back("OMPI_MCA_" + std::string(kSessionParams[i]) + "=");
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::vector<int> affinity_cpu_list() {
  std::vector<int> out;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (::sched_getaffinity(0, sizeof(mine), &mine) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &mine)) out.push_back(c);
  } else {
    for (long c = 0; c < ::sysconf(_SC_NPROCESSORS_ONLN); ++c) out.push_back(static_cast<int>(c));
  }
  return out;
}

std::string cpu_slice(const std::vector<int>& cpus, int slot, int runners) {
  const size_t n = cpus.size();
  if (n == 0 || runners <= 1) return "";
  std::vector<int> mine;
  if (n < static_cast<size_t>(runners)) {
    mine.push_back(cpus[static_cast<size_t>(slot) % n]);
  } else {  // slot s gets [s n / r, (s + 1) n / r): contiguous, sizes floor or ceil of n / r
    const size_t r = static_cast<size_t>(runners), s = static_cast<size_t>(slot) % r;
    for (size_t i = s * n / r; i < (s + 1) * n / r; ++i) mine.push_back(cpus[i]);
  }
  std::string list;  // runs of consecutive CPUs as ranges: "0-3,8"
  for (size_t i = 0; i < mine.size();) {
    size_t j = i;
    while (j + 1 < mine.size() && mine[j + 1] == mine[j] + 1) ++j;
    list += (list.empty() ? "" : ",") + std::to_string(mine[i]) + (j > i ? "-" + std::to_string(mine[j]) : "");
    i = j + 1;
  }
  return list;
}

std::vector<std::string> runner_cpus(const std::vector<std::string>& mpirun_args, int runners) {
  std::vector<std::string> out(static_cast<size_t>(std::max(runners, 0)));
  if (runners <= 1 || places_ranks(mpirun_args) || !on_path("taskset")) return out;
  const std::vector<int> cpus = affinity_cpu_list();
  for (int w = 0; w < runners; ++w) out[static_cast<size_t>(w)] = cpu_slice(cpus, w, runners);
  return out;
}

std::string mpirun_slots_refusal(const std::vector<std::string>& cpus, const std::vector<int>& ranks,
                                 const std::vector<std::string>& mpirun_args, const std::string& session_base) {
  for (const std::string& a : mpirun_args)  // Open MPI 4.1's options that name other hosts
    for (const char* o : {"-H", "-host", "--host", "-hostfile", "--hostfile", "-machinefile", "--machinefile",
                          "--default-hostfile", "-default-hostfile"})
      if (a == o || a.rfind(std::string(o) + "=", 0) == 0) return "";
  std::vector<std::pair<std::string, int>> tried;
  for (const std::string& c : cpus)
    for (int k : ranks) {
      if (k < 2 || std::find(tried.begin(), tried.end(), std::pair{c, k}) != tried.end()) continue;
      tried.emplace_back(c, k);
      std::vector<std::string> argv = mpirun_on(c, k);
      argv.insert(argv.end(), mpirun_args.begin(), mpirun_args.end());
      argv.push_back("/bin/true");
      const ProcessResult r = run_capture(in_mpi_session(session_base, argv));
      std::error_code ec;
      std::filesystem::remove_all(session_base, ec);
      if (r.exit_code == 0 || r.err.find("not enough slots") == std::string::npos) continue;
      return "mpirun -np " + std::to_string(k) + (c.empty() ? "" : " on CPUs " + c + " (a runner's share)") +
             " refuses to start here: \"There are not enough slots available in the system\" (Open MPI counts the "
             "processor cores it may use)";
    }
  return "";
}

std::vector<std::string> mpirun_on(const std::string& cpus, int ranks) {
  std::vector<std::string> argv;
  if (!cpus.empty()) argv = {"taskset", "--cpu-list", cpus};
  argv.insert(argv.end(), {"mpirun", "-np", std::to_string(ranks)});
  if (!cpus.empty()) argv.insert(argv.end(), {"--bind-to", "none"});
  return argv;
}

bool places_ranks(const std::vector<std::string>& mpirun_args, bool environment) {
  // Open MPI 4.1's mapping and binding options (one dash or two, "=VALUE" attached or not), and the MCA parameters
  // behind them (--mca NAME VALUE, or OMPI_MCA_NAME in the environment).
  static const char* const kOptions[] = {"cpu-set", "cpu-list", "bind-to", "map-by", "rank-by", "rankfile", "rf",
                                         "bynode", "byslot", "bycore", "bysocket", "npersocket", "cpus-per-proc",
                                         "cpus-per-rank", "use-hwthread-cpus"};
  static const char* const kParams[] = {"hwloc_base_binding_policy", "hwloc_base_cpu_set", "hwloc_base_cpu_list",
                                        "rmaps_base_mapping_policy", "rmaps_base_ranking_policy", "rmaps_rank_file_path"};
  for (const char* p : kParams)
    if (environment && std::getenv(("OMPI_MCA_" + std::string(p)).c_str()) != nullptr) return true;
  for (const std::string& a : mpirun_args) {
    for (const char* p : kParams)
      if (a == p) return true;
    if (a.size() < 2 || a[0] != '-') continue;
    std::string name = a.substr(a[1] == '-' ? 2 : 1);
    name = name.substr(0, name.find('='));
    for (const char* p : kOptions)
      if (name == p) return true;
  }
  return false;
}

int sets_session_folder(const std::vector<std::string>& mpirun_args) {
  for (size_t i = 0; i < mpirun_args.size(); ++i)
    for (const char* p : kSessionParams)
      if (mpirun_args[i] == p || mpirun_args[i].rfind("OMPI_MCA_" + std::string(p) + "=", 0) == 0)
        return static_cast<int>(i);
  return -1;
}

std::string tail_of(const std::filesystem::path& file, size_t bytes) {
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  if (size <= 0) return "";  // empty, or not seekable (-1)
  const std::streamoff from = size > static_cast<std::streamoff>(bytes) ? size - static_cast<std::streamoff>(bytes) : 0;
  in.seekg(from);
  std::string s(static_cast<size_t>(size - from), '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<size_t>(in.gcount()));
  if (from > 0) s = "..." + s;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

bool on_path(const std::string& program) {
  const std::string p = find_program(program);
  return !p.empty() && ::access(p.c_str(), X_OK) == 0;
}

void require_launcher(bool local, bool submit) {
  if (local && !on_path("mpirun")) throw BadInput("--local needs mpirun on PATH (Open MPI: scripts/setup.sh installs it)");
  if (submit && !on_path("sbatch")) throw BadInput("--submit needs sbatch on PATH (is this a Slurm login node?)");
}

std::string dtbench_binary() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw RunFailed("cannot find the dtbench binary (/proc/self/exe): " + ec.message());
  return self.string();
}

}  // namespace dtbench::slurm
