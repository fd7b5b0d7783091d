// Quoting: shell_quote is checked against bash itself (the reference for what a word means), and
// sbatch_quote against the escaping rules of sbatch's #SBATCH parser (src/sbatch/opt.c,
// _get_argument); the Slurm end-to-end test submits such a line to a real sbatch.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "slurm/process.hpp"
#include "slurm/shell.hpp"

using namespace dtbench::slurm;

namespace {

// What bash makes of `printf '%s\0' WORD`: the bytes of the word as bash sees it.
std::string through_bash(const std::string& word) {
  ProcessResult r = run_capture({"/bin/bash", "-c", "printf '%s\\0' " + word});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

const std::vector<std::string> kNasty = {
    "",  "plain", "two words", "it's", "\"double\"", "$(touch pwned)", "`touch pwned`", "${HOME}", "$HOME",
    "a;b|c&d", "<in >out", "*", "?", "[ab]", "~", "#comment", "back\\slash", "line\nbreak", "tab\there",
    "'; rm -rf / #", "\\'", "ünïcødé", "!!", "a\"b'c$d`e\\f",
};

}  // namespace

TEST(ShellQuote, BashReadsBackEveryByte) {
  for (const auto& s : kNasty) EXPECT_EQ(through_bash(shell_quote(s)), s + std::string(1, '\0')) << "input: " << s;
}

TEST(ShellQuote, ManyWordsStaySeparate) {
  std::string line;
  std::string expected;
  for (const auto& s : kNasty) {
    line.append(" ").append(shell_quote(s));
    expected.append(s).push_back('\0');
  }
  std::string command = "printf '%s\\0'";
  command += line;
  ProcessResult r = run_capture({"/bin/bash", "-c", command});
  EXPECT_EQ(r.out, expected);
}

// get_argument (src/sbatch/opt.c, Slurm 22.05) applied to one quoted value: the reference for what
// sbatch reads, transcribed so the unit test needs no Slurm (the cluster test submits real jobs).
std::string sbatch_reads(const std::string& line) {
  std::string arg;
  bool escape = false, quoted = false;
  char q = 0;
  for (size_t i = 0; i < line.size() && (quoted || !std::isspace(static_cast<unsigned char>(line[i]))); ++i) {
    char c = line[i];
    if (escape) escape = false;
    else if (c == '\\') { escape = true; continue; }
    else if (quoted) { if (c == q) { quoted = false; continue; } }
    else if (c == '"' || c == '\'') { quoted = true; q = c; continue; }
    else if (c == '#') break;
    arg += c;
  }
  return arg;
}

TEST(SbatchQuote, SbatchReadsBackTheValue) {
  EXPECT_EQ(sbatch_quote("plain-name_1.2", "x"), "plain-name_1.2");
  EXPECT_EQ(sbatch_quote("a b", "x"), "\"a b\"");
  EXPECT_EQ(sbatch_quote("a#b", "x"), "\"a#b\"");
  EXPECT_EQ(sbatch_quote("it's \"q\"", "x"), "\"it's \\\"q\\\"\"");
  EXPECT_EQ(sbatch_quote("back\\slash", "x"), "\"back\\\\slash\"");
  EXPECT_EQ(sbatch_quote("$(x);|&", "x"), "$(x);|&");  // sbatch does not interpret these
  for (const auto& s : kNasty) {
    if (has_control_chars(s)) continue;
    EXPECT_EQ(sbatch_reads(sbatch_quote(s, "x") + " trailing"), s) << s;
  }
  EXPECT_THROW(sbatch_quote("line\nbreak", "/name"), dtbench::BadInput);
  try {
    sbatch_quote("a\rb", "/name");
    FAIL();
  } catch (const dtbench::BadInput& e) {
    EXPECT_STREQ(e.what(), "/name: a line break or NUL cannot be passed on an #SBATCH line");
  }
}

TEST(SbatchQuote, PathsDoublePercentUnlessABackslashTurnsPatternsOff) {
  EXPECT_EQ(sbatch_quote_path("/r/100%/x.out"), "/r/100%%/x.out");
  EXPECT_EQ(sbatch_quote_path("/r/my runs/x.out"), "\"/r/my runs/x.out\"");
  EXPECT_EQ(sbatch_quote_path("/r/a\\b%/x"), "\"/r/a\\\\b%/x\"");
}

TEST(SafeName, KeepsOnlyFileSafeCharacters) {
  EXPECT_EQ(safe_name("ring", 24), "ring");
  EXPECT_EQ(safe_name("../../etc/passwd", 64), "_.._etc_passwd");
  EXPECT_EQ(safe_name("a b;c$(d)", 64), "a_b_c_d");
  EXPECT_EQ(safe_name("-rf", 64), "rf");
  EXPECT_EQ(safe_name(".hidden", 64), "hidden");
  EXPECT_EQ(safe_name("", 64), "x");
  EXPECT_EQ(safe_name("///", 64), "x");
  EXPECT_EQ(safe_name("abcdefgh", 4), "abcd");
  for (const auto& s : kNasty) {
    std::string n = safe_name(s, 24);
    EXPECT_FALSE(n.empty());
    EXPECT_EQ(n.find('/'), std::string::npos);
    EXPECT_NE(n, "..");
    EXPECT_NE(n.front(), '-');
    EXPECT_NE(n.front(), '.');
  }
}

TEST(ControlChars, TabIsAllowedLineBreaksAreNot) {
  EXPECT_FALSE(has_control_chars("a\tb"));
  EXPECT_TRUE(has_control_chars("a\nb"));
  EXPECT_TRUE(has_control_chars("a\rb"));
  EXPECT_TRUE(has_control_chars(std::string("a\0b", 3)));
  EXPECT_FALSE(has_control_chars("ünïcødé"));
}

// Runs `script` with run_to_files(`signal`) from a forked copy of this test, its "parent", and kills that parent
// (SIGKILL) once the script has touched `ready`. False when the script did not start within 4 s.
bool run_and_kill_its_parent(const std::string& script, const std::filesystem::path& dir, int signal,
                             const std::string& ready) {
  const pid_t parent = ::fork();
  if (parent < 0) return false;
  if (parent == 0) {  // the parent of the child: waits for it, and is killed before it ends
    run_to_files({"/bin/sh", "-c", script}, dir / "out", dir / "err", signal);
    ::_exit(0);
  }
  for (int i = 0; i < 200 && !std::filesystem::exists(ready); ++i) ::usleep(20000);
  const bool started = std::filesystem::exists(ready);
  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
  return started;
}

// run_to_files with a parent-death signal: when the process that started the child dies (SIGKILL, no chance to
// clean up), the child gets SIGTERM (what lets a killed dtbench pbt's members checkpoint instead of running on).
// The "parent" is a forked copy of this test, so that the test itself survives; the child's trap writes a mark.
TEST(RunToFiles, ParentDeathSignalReachesTheChild) {
  char tmpl[] = "/tmp/dtbench-pdeathsig-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::filesystem::path dir = tmpl;
  const std::string mark = (dir / "mark").string(), ready = (dir / "ready").string();
  const std::string script = "trap 'echo TERM > " + mark + "; exit 3' TERM; touch " + ready +
                             "; for i in $(seq 300); do sleep 0.1; done; echo timeout > " + mark;
  for (const int signal : {SIGTERM, 0}) {
    std::filesystem::remove(mark), std::filesystem::remove(ready);
    ASSERT_TRUE(run_and_kill_its_parent(script, dir, signal, ready)) << "the child did not start";
    for (int i = 0; i < 100 && !std::filesystem::exists(mark); ++i) ::usleep(20000);
    if (signal == SIGTERM) {
      ASSERT_TRUE(std::filesystem::exists(mark)) << "no SIGTERM within 2 s of the parent's death";
      std::ifstream in(mark);
      std::string text;
      in >> text;
      EXPECT_EQ(text, "TERM");
    } else {
      // Without it the orphan runs on (the behaviour the signal is there to prevent); end it by hand.
      EXPECT_FALSE(std::filesystem::exists(mark));
      run_capture({"pkill", "-TERM", "-f", ready});
      for (int i = 0; i < 100 && !std::filesystem::exists(mark); ++i) ::usleep(20000);
    }
  }
  std::filesystem::remove_all(dir);
}

// The guard passes the parent-death signal on again every second until the program ends: mpirun forwards one only to
// the ranks it has started, so a run started just before its campaign died trained on to its end. Here the program
// takes the first signal and ends on the second, within 2 s of the parent's death.
TEST(RunToFiles, ThePassedSignalRepeatsUntilTheProgramEnds) {
  char tmpl[] = "/tmp/dtbench-repeat-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::filesystem::path dir = tmpl;
  const std::string mark = (dir / "mark").string(), ready = (dir / "ready").string();
  const std::string script = "n=0; trap 'n=$((n+1)); if [ $n -ge 2 ]; then echo twice > " + mark +
                             "; exit 3; fi' TERM; touch " + ready + "; for i in $(seq 300); do sleep 0.1; done";
  ASSERT_TRUE(run_and_kill_its_parent(script, dir, SIGTERM, ready)) << "the child did not start";
  for (int i = 0; i < 150 && !std::filesystem::exists(mark); ++i) ::usleep(20000);
  ASSERT_TRUE(std::filesystem::exists(mark)) << "no second signal within 3 s of the parent's death";
  std::filesystem::remove_all(dir);
}

// With a parent-death signal the program runs in a process group of its own, led by the guard between the two (its
// parent, which passes the signal on): a terminal's Ctrl-C reaches only this process, whose death then signals it;
// its standard input is /dev/null. Without one it stays in its parent's group (this process's).
TEST(RunToFiles, ATiedChildLeadsItsOwnProcessGroup) {
  char tmpl[] = "/tmp/dtbench-pgid-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::filesystem::path dir = tmpl;
  const std::string group = "$(cut -d' ' -f5 /proc/$$/stat)";
  const std::string led_by_parent = "[ \"" + group + "\" = \"$PPID\" ]";
  const std::string in_ours = "[ \"" + group + "\" = \"" + std::to_string(::getpgrp()) + "\" ]";
  const std::string no_stdin = "[ \"$(readlink /proc/$$/fd/0)\" = /dev/null ]";
  EXPECT_EQ(run_to_files({"/bin/sh", "-c", led_by_parent}, dir / "out", dir / "err", SIGUSR1), 0);
  EXPECT_EQ(run_to_files({"/bin/sh", "-c", in_ours}, dir / "out", dir / "err", SIGUSR1), 1);
  EXPECT_EQ(run_to_files({"/bin/sh", "-c", no_stdin}, dir / "out", dir / "err", SIGUSR1), 0);
  EXPECT_EQ(run_to_files({"/bin/sh", "-c", in_ours}, dir / "out", dir / "err"), 0);
  std::filesystem::remove_all(dir);
}

// A close-on-exec descriptor (a campaign folder's lock) reaches only the child given it as inherit_fd, with or
// without a parent-death signal; a captured command (squeue, sbatch) never gets it, so that such a command still
// running when its campaign is killed does not hold the campaign's lock. The child sees the descriptor in
// /proc/self/fd.
TEST(RunToFiles, OnlyTheInheritedDescriptorCrossesExec) {
  char tmpl[] = "/tmp/dtbench-inherit-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::filesystem::path dir = tmpl;
  const int fd = ::open((dir / "lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const std::string has_fd = "[ -e /proc/self/fd/" + std::to_string(fd) + " ]";
  EXPECT_EQ(run_to_files({"/bin/sh", "-c", has_fd}, dir / "out", dir / "err", 0, fd), 0);
  EXPECT_EQ(run_to_files({"/bin/sh", "-c", has_fd}, dir / "out", dir / "err", SIGTERM, fd), 0);
  EXPECT_EQ(run_to_files({"/bin/sh", "-c", has_fd}, dir / "out", dir / "err"), 1);
  EXPECT_EQ(run_to_files({"/bin/sh", "-c", has_fd}, dir / "out", dir / "err", SIGTERM), 1);
  EXPECT_EQ(run_capture({"/bin/sh", "-c", has_fd}).exit_code, 1);
  // The inherited descriptor is this process's open file description, so it holds this process's lock: flock(1)
  // on descriptor N (no command) succeeds on it, while the lock file opened afresh (another description) is
  // refused.
  EXPECT_EQ(run_to_files({"/bin/sh", "-c", "flock -n " + std::to_string(fd)}, dir / "out", dir / "err", 0, fd), 0);
  EXPECT_EQ(run_to_files({"flock", "-n", (dir / "lock").string(), "true"}, dir / "out", dir / "err"), 1);
  ::close(fd);
  std::filesystem::remove_all(dir);
}

// display_word quotes only what a shell would read otherwise, at any length: the std::regex it used recursed once
// per character and a 40,000-character mpirun argument crashed `sweep --local --dry-run` (SIGSEGV; a hunt).
TEST(DisplayWord, PlainWordsStayAndOthersAreQuotedAtAnyLength) {
  EXPECT_EQ(display_word("--map-by=ppr:2:node"), "--map-by=ppr:2:node");
  EXPECT_EQ(display_word("a b"), "'a b'");
  EXPECT_EQ(display_word(""), "''");
  EXPECT_EQ(display_word("\xc3\xa9"), "'\xc3\xa9'");  // UTF-8: not a plain ASCII word
  const std::string long_plain(40000, 'a');
  EXPECT_EQ(display_word(long_plain), long_plain);
  EXPECT_EQ(display_word(long_plain + "$"), "'" + long_plain + "$'");
  EXPECT_TRUE(word_chars("", "_"));
  EXPECT_FALSE(word_chars(std::string("a\0b", 3), "_"));  // NUL is not among the extra characters
  EXPECT_TRUE(parts("a,b", ',', [](std::string_view p) { return word_chars(p, ""); }));
  EXPECT_FALSE(parts("a,,b", ',', [](std::string_view p) { return word_chars(p, ""); }));
  EXPECT_FALSE(parts("a,", ',', [](std::string_view p) { return word_chars(p, ""); }));
}

TEST(TailOf, TheLastBytesMarkedWhenCutWithoutTrailingNewlines) {
  const std::filesystem::path f = std::filesystem::temp_directory_path() / ("dtbench-tail-" + std::to_string(::getpid()));
  std::ofstream(f) << "a\nb\nccc\n\n";  // 10 bytes
  EXPECT_EQ(tail_of(f, 100), "a\nb\nccc");
  EXPECT_EQ(tail_of(f, 10), "a\nb\nccc");
  EXPECT_EQ(tail_of(f, 5), "...ccc");  // "ccc\n\n"
  EXPECT_EQ(tail_of(f, 0), "...");
  std::filesystem::remove(f);
  EXPECT_EQ(tail_of(f, 100), "");  // gone: nothing to quote
}

TEST(MpiSessionBase, ShortAndOneFolderPerCampaignKindAndSlot) {
  const std::string a = mpi_session_base("/x/campaign", "sweep", 0);
  const std::string prefix = "/tmp/dtbench-sweep-" + std::to_string(::getuid()) + "-";  // one user's
  EXPECT_EQ(a.rfind(prefix, 0), 0u) << a;
  EXPECT_EQ(a.size(), prefix.size() + 12 + 3) << a;  // 12 hex digits, "-00"
  EXPECT_EQ(a.substr(a.size() - 3), "-00");
  EXPECT_EQ(mpi_session_base("/x/campaign", "sweep", 0), a);  // the same folder on every call
  EXPECT_NE(mpi_session_base("/x/campaign", "sweep", 1), a);
  EXPECT_NE(mpi_session_base("/x/other", "sweep", 0), a);
  EXPECT_NE(mpi_session_base("/x/campaign", "pbt", 0), a);
  // Open MPI's sockets below it (ompi.<host>.<uid>/pid.<pid>/...) must stay under 108 bytes.
  EXPECT_LE(mpi_session_base("/x", "sweep", 99).size(), 48u);
}

TEST(CpuSlice, ContiguousSlicesThatCoverTheCpusOnce) {
  const std::vector<int> eight = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(cpu_slice(eight, 0, 1), "");  // one runner: nothing to divide
  EXPECT_EQ(cpu_slice(eight, 0, 2), "0-3");
  EXPECT_EQ(cpu_slice(eight, 1, 2), "4-7");
  EXPECT_EQ(cpu_slice(eight, 0, 3), "0-1");  // 8 / 3: sizes 2, 3, 3
  EXPECT_EQ(cpu_slice(eight, 1, 3), "2-4");
  EXPECT_EQ(cpu_slice(eight, 2, 3), "5-7");
  EXPECT_EQ(cpu_slice({0, 2, 3, 5, 9, 10}, 0, 1), "");
  EXPECT_EQ(cpu_slice({0, 2, 3, 5, 9, 10}, 0, 2), "0,2-3");  // a mask with holes keeps its own CPUs
  EXPECT_EQ(cpu_slice({0, 2, 3, 5, 9, 10}, 1, 2), "5,9-10");
  EXPECT_EQ(cpu_slice({4, 5}, 2, 3), "4");  // more runners than CPUs: CPU slot mod n
  EXPECT_EQ(cpu_slice({4, 5}, 1, 3), "5");
  EXPECT_EQ(cpu_slice({}, 0, 2), "");
}

TEST(PlacesRanks, OpenMpiPlacementOptionsInAnySpelling) {
  EXPECT_FALSE(places_ranks({}));
  EXPECT_FALSE(places_ranks({"--oversubscribe", "--mca", "btl", "self,vader", "-x", "FOO"}));
  EXPECT_TRUE(places_ranks({"--bind-to", "none"}));
  EXPECT_TRUE(places_ranks({"-bind-to", "core"}));
  EXPECT_TRUE(places_ranks({"--map-by=ppr:1:core"}));
  EXPECT_TRUE(places_ranks({"--cpu-set", "0-3"}));
  EXPECT_TRUE(places_ranks({"-rf", "ranks.txt"}));
  EXPECT_TRUE(places_ranks({"--mca", "hwloc_base_binding_policy", "none"}));
  EXPECT_FALSE(places_ranks({"--report-bindings"}));  // says where, does not choose
}

// A runner's mpirun: confined to its CPUs by taskset, without Open MPI's own binding (which ignores the mask).
TEST(RunnerCpus, SlicesOfThisProcessAndTheirMpirun) {
  EXPECT_EQ(mpirun_on("", 3), (std::vector<std::string>{"mpirun", "-np", "3"}));
  EXPECT_EQ(mpirun_on("2-3", 2),
            (std::vector<std::string>{"taskset", "--cpu-list", "2-3", "mpirun", "-np", "2", "--bind-to", "none"}));
  EXPECT_EQ(runner_cpus({}, 1), std::vector<std::string>{""});  // one runner: Open MPI's placement
  EXPECT_EQ(runner_cpus({"--bind-to", "core"}, 2), (std::vector<std::string>{"", ""}));  // the user's placement
  const std::vector<int> mine = affinity_cpu_list();
  const std::vector<std::string> two = runner_cpus({"--oversubscribe"}, 2);
  ASSERT_EQ(two.size(), 2u);
  if (!on_path("taskset")) GTEST_SKIP() << "no taskset on PATH: runs are not placed";
  EXPECT_EQ(two[0], cpu_slice(mine, 0, 2));
  EXPECT_EQ(two[1], cpu_slice(mine, 1, 2));
  if (mine.size() >= 2) {
    EXPECT_NE(two[0], two[1]);
  }
}

TEST(SetsSessionFolder, TheParametersThatPlaceSessionFilesAsNamesOrVariables) {
  EXPECT_EQ(sets_session_folder({}), -1);
  EXPECT_EQ(sets_session_folder({"--oversubscribe", "--mca", "btl", "self,vader", "-x", "FOO"}), -1);
  EXPECT_EQ(sets_session_folder({"--oversubscribe", "--mca", "orte_tmpdir_base", "/scratch"}), 2);
  EXPECT_EQ(sets_session_folder({"-gmca", "orte_local_tmpdir_base", "/scratch"}), 1);
  EXPECT_EQ(sets_session_folder({"--mca", "orte_top_session_dir", "/scratch"}), 1);
  EXPECT_EQ(sets_session_folder({"-mca", "orte_jobfam_session_dir", "/scratch"}), 1);
  EXPECT_EQ(sets_session_folder({"-x", "OMPI_MCA_orte_remote_tmpdir_base=/scratch"}), 1);
  // Exporting the variable as this process has it passes on what in_mpi_session set: harmless.
  EXPECT_EQ(sets_session_folder({"-x", "OMPI_MCA_orte_tmpdir_base"}), -1);
  // Other names that merely start alike, and values that contain a name, set nothing.
  EXPECT_EQ(sets_session_folder({"-x", "OMPI_MCA_orte_tmpdir_base_x=1", "--tag", "orte_tmpdir_base/run"}), -1);
  EXPECT_EQ(sets_session_folder({"--mca", "orte_tmpdir", "/scratch"}), -1);  // not a parameter of Open MPI 4.1
}

// The base, and Open MPI's other parameters that place session files emptied (a local or remote base beside the
// base, even from a parameter file, makes mpirun refuse to start): the same line whatever this process's environment.
TEST(InMpiSession, SetsTheBaseAndEmptiesTheParametersThatWouldConflict) {
  ::setenv("OMPI_MCA_orte_local_tmpdir_base", "/scratch", 1);
  EXPECT_EQ(in_mpi_session("/tmp/b", {"mpirun", "-np", "2"}),
            (std::vector<std::string>{"env", "OMPI_MCA_orte_tmpdir_base=/tmp/b", "OMPI_MCA_orte_local_tmpdir_base=",
                                      "OMPI_MCA_orte_remote_tmpdir_base=", "OMPI_MCA_orte_top_session_dir=",
                                      "OMPI_MCA_orte_jobfam_session_dir=", "mpirun", "-np", "2"}));
  ::unsetenv("OMPI_MCA_orte_local_tmpdir_base");
}

// A program that does not answer within run_capture's time limit is killed and reported as such (squeue hangs while
// slurmctld is stopped, which held sweep --wait past its --timeout: a hunt); one that answers in time is untouched.
TEST(RunCapture, AProgramPastItsTimeLimitIsKilled) {
  const auto started = std::chrono::steady_clock::now();
  // A wrapper whose own child holds the output: both are killed (their group), or the pipe would stay open 30 s.
  ProcessResult r = run_capture({"/bin/sh", "-c", "echo partial; sleep 30.0625; true"}, false, 0.5);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(r.exit_code, kTimedOut);
  EXPECT_EQ(r.out, "partial\n");
  EXPECT_EQ(r.err, "no answer within 0.5 s (killed)");
  EXPECT_GE(took, 0.5);
  EXPECT_LT(took, 10.0);  // 30 s if it were not killed; generous for a loaded machine
  bool left = true;  // the wrapper's sleep, killed with it (init reaps it within moments)
  for (int i = 0; i < 40 && left; ++i) {
    left = run_capture({"pgrep", "-f", "sleep 30.0625"}).exit_code == 0;
    if (left) ::usleep(50000);
  }
  EXPECT_FALSE(left) << "the wrapper's child outlived the time limit";
  r = run_capture({"/bin/sh", "-c", "echo done; echo said >&2; exit 3"}, false, 20);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "done\n");
  EXPECT_EQ(r.err, "said\n");
}

// A stop signal (the terminal's Ctrl-C) while a time-limited program runs in its own group ends that group too, then
// the process as before: Ctrl-C during a hung squeue left it running after dtbench had gone (a hunt). The caller here
// is a forked child, which the SIGINT ends.
TEST(RunCapture, AStopSignalEndsTheTimeLimitedProgramsGroupToo) {
  const pid_t caller = ::fork();
  ASSERT_GE(caller, 0);
  if (caller == 0) {
    run_capture({"/bin/sh", "-c", "sleep 30.1875; true"}, false, 60);
    ::_exit(0);
  }
  bool started = false;
  for (int i = 0; i < 100 && !started; ++i) {
    started = run_capture({"pgrep", "-f", "sleep 30.1875"}).exit_code == 0;
    if (!started) ::usleep(50000);
  }
  ASSERT_TRUE(started);
  ::kill(caller, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(caller, &status, 0), caller);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << status;  // the signal's own action, as before
  bool left = true;
  for (int i = 0; i < 40 && left; ++i) {
    left = run_capture({"pgrep", "-f", "sleep 30.1875"}).exit_code == 0;
    if (left) ::usleep(50000);
  }
  EXPECT_FALSE(left) << "the time-limited program outlived its caller's Ctrl-C";
  if (left) run_capture({"pkill", "-f", "sleep 30.1875"});
}
