#include "slurm/sweep.hpp"

#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "core/atomic_file.hpp"
#include "core/cli_checks.hpp"
#include "core/bounded_pool.hpp"
#include "core/dir_lock.hpp"
#include "core/error.hpp"
#include "core/regular_file.hpp"
#include "core/run_record.hpp"
#include "core/timer.hpp"
#include "core/campaign_index.hpp"
#include "slurm/campaign.hpp"
#include "slurm/expand.hpp"
#include "slurm/process.hpp"
#include "slurm/sbatch_script.hpp"
#include "slurm/shell.hpp"
#include "slurm/spec.hpp"

namespace dtbench {
namespace fs = std::filesystem;
using namespace slurm;

namespace {

// "1 run", "2 runs".
std::string count(size_t n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

std::vector<std::string> default_program() { return {dtbench_binary(), "train"}; }

// Every file the sweep writes must stay inside --out; run names are file-safe by construction,
// this is the guard that keeps it so.
void check_inside(const fs::path& out, const fs::path& p) {
  fs::path rel = p.lexically_normal().lexically_relative(out);
  if (rel.empty() || *rel.begin() == "..")
    throw BadInput(p.string() + ": would lie outside --out " + out.string());
}

struct Item {
  const Point* point;
  const Run* run;
  RunState state;
  std::string detail;
  // The record's modification time when it was read (none: no record): a second survey takes a record that was
  // done and is unchanged since as checked, and does not read its weights file again.
  std::optional<fs::file_time_type> record_time = std::nullopt;
};

bool needs_run(RunState s) { return s == RunState::missing || s == RunState::preempted || s == RunState::failed; }

// A job array's tasks to submit: those of group `g`'s runs that need a run, as sbatch's --array list ("0,2,5"), and
// their submissions (job ids to fill).
std::pair<std::string, std::vector<Submission>> array_tasks(const std::vector<Item>& items, const ArrayGroup& group) {
  std::vector<Submission> subs;
  std::string list;
  for (size_t t = 0; t < group.runs.size(); ++t)
    for (const auto& it : items)
      if (it.run == group.runs[t] && needs_run(it.state)) {
        subs.push_back({it.run->name, "", static_cast<int64_t>(t)});
        list += (list.empty() ? "" : ",") + std::to_string(t);
      }
  return {list, subs};
}

// Before anything is written or submitted, Slurm judges each distinct resource request of the runs to submit
// (sbatch_refuses): a partition that does not exist failed at its point's sbatch, exit 1 after the campaign was
// written and earlier points' jobs were queued, which --wait then left. Job arrays are judged as they are submitted,
// each with its task list: one beyond Slurm's MaxArraySize (1001 tasks by default) failed at its sbatch likewise.
void test_requests(const Spec& spec, const std::vector<Item>& items, const std::vector<Point>& points, const Layout& l,
                   bool arrays, const std::string& spec_file) {
  std::set<std::string> tested;
  std::optional<std::vector<std::string>> plugins;  // srun's MPI plugins, asked once where a point launches with srun
  for (const Item& it : items) {
    if (!needs_run(it.state) || !tested.insert(it.point->slurm.dump()).second) continue;
    if (it.point->slurm["launcher"] == "srun") {
      if (!plugins) plugins = srun_mpi_plugins();
      if (const std::string why = srun_lacks_mpi(*plugins, it.point->slurm["mpi"].get<std::string>()); !why.empty())
        throw BadInput(spec_file + ": /slurm/mpi: " + why + " (point " + it.point->id + ": " + describe(*it.point) + ")");
    }
    const std::string refused = sbatch_refuses(run_script(spec, *it.point, *it.run, l));
    if (!refused.empty())
      throw BadInput(spec_file + ": /slurm: Slurm refuses the request of point " + it.point->id + " (" +
                     describe(*it.point) + "): " + refused);
  }
  if (!arrays) return;
  const auto groups = array_groups(points);
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string list = array_tasks(items, groups[g]).first;
    if (list.empty()) continue;
    const std::string refused = sbatch_refuses(array_script(spec, groups[g], g, l), {"--array=" + list});
    if (!refused.empty())
      throw BadInput(spec_file + ": /slurm/array: Slurm refuses job array " + std::to_string(g) + " of " +
                     std::to_string(groups[g].runs.size()) + " tasks (tasks " +
                     (list.size() > 40 ? list.substr(0, 37) + "..." : list) + "): " + refused);
  }
}

// `polling`: record_state's (--wait's loop and the reports after runs, where a record that cannot be examined for a
// moment is one not written yet). `before`: an earlier survey of the same points (the sweep's start looks again under
// its lock): a record it found done, unchanged since, keeps its weights check.
std::vector<Item> survey(const std::vector<Point>& points, const Layout& l, bool polling = false,
                         const std::vector<Item>* before = nullptr) {
  std::vector<Item> items;
  for (const auto& p : points)
    for (const auto& r : p.runs) {
      for (const auto& f : {config_path(l, r), record_path(l, r), script_path(l, r)}) check_inside(l.out, f);
      Item it{&p, &r, RunState::missing, ""};
      const fs::path record = record_path(l, r);
      std::error_code ec;
      if (const auto t = fs::last_write_time(record, ec); !ec) it.record_time = t;
      const Item* was = before && items.size() < before->size() ? &(*before)[items.size()] : nullptr;
      const bool checked = was && was->run == &r && was->state == RunState::done && was->record_time &&
                           was->record_time == it.record_time;
      it.state = record_state(record, r.config, it.detail, p.ranks, polling, checked);
      items.push_back(it);
    }
  return items;
}

std::map<RunState, size_t> count_states(const std::vector<Item>& items) {
  std::map<RunState, size_t> n;
  for (const auto& it : items) n[it.state]++;
  return n;
}

std::string state_summary(const std::vector<Item>& items) {
  auto n = count_states(items);
  std::string s;
  for (RunState st : {RunState::done, RunState::queued, RunState::preempted, RunState::failed, RunState::missing})
    if (n[st]) s += (s.empty() ? "" : ", ") + std::to_string(n[st]) + " " + to_string(st);
  return s;
}

// [taskset --cpu-list CPUS] mpirun -np K [--bind-to none] [local args] PROGRAM... CONFIG --resume: a run on this
// machine, no Slurm. run_local starts it in the Open MPI session folder of its runner thread (mpi_session_base: runs
// side by side, or beside other jobs on the host, failed to start when they shared one) and, with --jobs, on the
// runner's CPUs (runner_cpus, mpirun_on).
std::vector<std::string> local_argv(const Spec& spec, const Layout& l, const Item& it, const std::string& cpus = "") {
  std::vector<std::string> argv = mpirun_on(cpus, it.point->ranks);
  for (const auto& a : spec.local["mpirun_args"]) argv.push_back(a.get<std::string>());
  for (const auto& a : l.program) argv.push_back(a);
  argv.push_back(config_path(l, *it.run).string());
  argv.push_back("--resume");
  return argv;
}

// After --wait or --local: every run must have a complete record.
void final_report(const std::vector<Point>& points, const Layout& l, std::ostream& out) {
  std::vector<Item> items = survey(points, l, /*polling=*/true);
  out << "sweep: " << count(items.size(), "run") << ": " << state_summary(items) << "\n";
  std::string bad;
  size_t n_bad = 0;
  for (const auto& it : items) {
    if (it.state == RunState::done) continue;
    ++n_bad;
    if (n_bad > 10) continue;
    bad += "\n  " + it.run->name + ": " + (it.detail.empty() ? to_string(it.state) : it.detail);
    // A job cancelled while pending never started, so it left no error file to point at.
    const fs::path err = l.runs / (it.run->name + ".err");
    bad += fs::exists(err) ? " (see " + err.string() + ")" : " (no " + err.string() + ": the run never started)";
  }
  if (n_bad) throw RunFailed(std::to_string(n_bad) + " of " + std::to_string(items.size()) + " runs have no complete record:" + bad);
}

// How many local runs at once: --jobs, capped by the spec's /local/max_jobs (runs whose outcome depends on the
// machine's pace).
int local_jobs(const Spec& spec, int jobs) {
  return spec.local.contains("max_jobs") ? std::min(jobs, spec.local["max_jobs"].get<int>()) : jobs;
}

// The spec's /local/mpirun_args.
std::vector<std::string> local_mpirun_args(const Spec& spec) {
  std::vector<std::string> args;
  for (const auto& a : spec.local["mpirun_args"]) args.push_back(a.get<std::string>());
  return args;
}

// The runners' CPUs (runner_cpus) for this spec's /local/mpirun_args.
std::vector<std::string> runner_cpus(const Spec& spec, int runners) {
  return slurm::runner_cpus(local_mpirun_args(spec), runners);
}

// Runs what needs running with mpirun, `jobs` at a time (each its own mpirun and its own output files), in the
// order of the items; a finished run's line is printed as it ends (with the end of its error output when it left no
// complete record: the reason shows where the failure is reported). Each run is tied to this process, as pbt's
// members are: killed (Ctrl-C, SIGTERM), the sweep's death sends its runs SIGUSR1, so they checkpoint and the rerun
// resumes them; and they hold the folder's lock (lock_fd) until they exit. Before, a killed sweep's runs trained on
// and a second sweep, finding the folder free, ran the same points beside them.
void run_local(const Spec& spec, std::vector<Item>& items, const Layout& l, int jobs, int lock_fd, std::ostream& out) {
  std::vector<Item*> todo;
  for (auto& it : items)
    if (needs_run(it.state)) todo.push_back(&it);
  const int runners = static_cast<int>(std::min(todo.size(), static_cast<size_t>(local_jobs(spec, jobs))));
  // The runners' session folders, empty once their runs have ended (Open MPI leaves the folders themselves), are
  // removed however the runs end; and first those an earlier sweep of this campaign left when it was killed (its
  // destructor never ran; found by a hunt), which no run uses now: this sweep holds the campaign's lock.
  struct RemoveSessions {
    const fs::path& campaign;
    void remove() const {
      const std::string first = mpi_session_base(campaign, "sweep", 0);
      const std::string prefix = first.substr(0, first.size() - 2);  // without the slot's two digits
      std::error_code ec;
      for (fs::directory_iterator it(fs::path(prefix).parent_path(), ec), end; !ec && it != end; it.increment(ec))
        if (it->path().string().rfind(prefix, 0) == 0) {
          std::error_code gone;
          fs::remove_all(it->path(), gone);
        }
    }
    ~RemoveSessions() { remove(); }
  } remove_sessions{l.out};
  remove_sessions.remove();
  const std::vector<std::string> cpus = runner_cpus(spec, runners);
  std::mutex m;  // guards `out`
  for_each_bounded(todo.size(), runners, [&](size_t i, int worker) {
    Item& it = *todo[i];
    const std::string k = "[" + std::to_string(i + 1) + "/" + std::to_string(todo.size()) + "] ";
    const std::vector<std::string> argv = in_mpi_session(mpi_session_base(l.out, "sweep", worker),
                                                         local_argv(spec, l, it, cpus[static_cast<size_t>(worker)]));
    {
      std::lock_guard<std::mutex> lock(m);
      out << k << it.run->name << " (" << it.point->ranks << (it.point->ranks == 1 ? " rank" : " ranks")
          << "): " << display_line(argv) << std::endl;
    }
    Stopwatch sw;
    const fs::path err = l.runs / (it.run->name + ".err");
    const int rc = run_to_files(argv, l.runs / (it.run->name + ".out"), err, SIGUSR1, lock_fd);
    std::string detail;
    it.state = record_state(record_path(l, *it.run), it.run->config, detail, it.point->ranks, /*polling=*/true);
    std::lock_guard<std::mutex> lock(m);
    out << k << it.run->name << ": exit " << rc << ", " << (detail.empty() ? std::string("no record") : detail)
        << ", " << std::fixed << std::setprecision(1) << sw.seconds() << " s" << std::defaultfloat << std::endl;
    if (it.state != RunState::done && it.state != RunState::preempted) {
      std::istringstream tail(tail_of(err, 1500));  // room for the run's message and mpirun's ~900 bytes after it
      for (std::string line; std::getline(tail, line);) out << "      | " << line << "\n";
      out << std::flush;
    }
  });
}

// While alive, this thread holds the stop signals (SIGINT, SIGTERM, SIGHUP) back, and sbatch runs in a process group
// of its own (submit_job), which the terminal's Ctrl-C does not reach: a job that sbatch queued is listed in
// jobs.json before Ctrl-C ends the sweep. Without it, a Ctrl-C between the two left a queued job that no file named,
// and the rerun queued its run again (found by a hunt). The signal is delivered when the scope ends.
class HoldStopSignals {
 public:
  HoldStopSignals() {
    sigset_t stop;
    sigemptyset(&stop);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop, s);
    ::pthread_sigmask(SIG_BLOCK, &stop, &was_);
  }
  ~HoldStopSignals() { ::pthread_sigmask(SIG_SETMASK, &was_, nullptr); }
  HoldStopSignals(const HoldStopSignals&) = delete;
  HoldStopSignals& operator=(const HoldStopSignals&) = delete;

 private:
  sigset_t was_;
};

void run_submit(const std::vector<Item>& items, const std::vector<Point>& points, const Layout& l,
                bool arrays, std::ostream& out) {
  fs::path jobs = l.out / "jobs.json";
  size_t n = 0;
  if (arrays) {
    auto groups = array_groups(points);
    for (size_t g = 0; g < groups.size(); ++g) {
      auto [list, subs] = array_tasks(items, groups[g]);
      if (subs.empty()) continue;
      fs::path script = array_script_path(l, g);
      {
        HoldStopSignals hold;
        std::string id = submit_job({"sbatch", "--parsable", "--array=" + list, script.string()});
        for (auto& s : subs) s.job_id = id;
        append_submissions(jobs, subs, script.lexically_relative(l.out).string());
      }
      const std::string& id = subs.front().job_id;
      out << "submitted job array " << id << " (tasks " << list << ") from " << script.string() << std::endl;
      n += subs.size();
    }
  } else {
    for (const auto& it : items) {
      if (!needs_run(it.state)) continue;
      fs::path script = script_path(l, *it.run);
      std::string id;
      {
        HoldStopSignals hold;
        id = submit_job({"sbatch", "--parsable", script.string()});
        append_submissions(jobs, {{it.run->name, id, -1}}, script.lexically_relative(l.out).string());
      }
      out << "submitted job " << id << ": " << it.run->name << std::endl;
      ++n;
    }
  }
  out << "sweep: submitted " << count(n, "run") << "; job ids in " << jobs.string() << std::endl;
}

// Polls squeue until none of this campaign's submitted jobs is pending or running. A run whose job left the queue
// with a preempted record that job wrote (a job cancelled by preemption, PreemptMode=CANCEL, or killed at its time
// limit without /slurm/signal_seconds: the ranks checkpointed on SIGTERM but nothing requeued the job) is submitted
// again and resumes from its checkpoint, as long as each attempt gets further than the one before, at most
// kResubmissions times per run in one wait; before, --wait ended with exit 1 and the campaign waited for a rerun by
// hand (found by a review). A job its user cancelled (scancel: Slurm's final state CANCELLED, where preemption leaves
// PREEMPTED and a time limit TIMEOUT) is not submitted again: before, --wait undid the user's scancel. Slurm tells the
// final state for MinJobAge after the job ends; a job already forgotten is taken as preempted, as before.
void wait_for_jobs(const SweepOptions& o, const std::vector<Point>& points, const Layout& l, bool arrays,
                   std::ostream& out) {
  constexpr int kResubmissions = 20;
  auto latest = latest_submissions(l.out / "jobs.json");
  std::map<std::string, int> resubmitted;
  std::map<std::string, int64_t> steps_before;  // the steps of the attempt last resubmitted
  std::set<std::string> said;                   // runs left preempted, each said once
  std::set<std::string> cancelled;              // runs whose latest job its user cancelled
  Stopwatch sw;
  std::string last_line;
  double last_print = -1e9;
  bool tty = ::isatty(STDOUT_FILENO) && &out == &std::cout;
  for (;;) {
    // Asked again for up to 5 minutes when squeue fails, but not past --timeout.
    std::vector<ActiveJob> ended;
    auto active = query_queue(queue_patience(o.timeout_seconds, sw.seconds()), &out, &ended);
    std::vector<Item> items = survey(points, l, /*polling=*/true);
    {
      std::vector<Item> again = items;
      size_t n = 0;
      for (Item& it : again) {
        const std::string& run = it.run->name;
        const auto s = latest.find(run);
        const bool gone_from_queue = s != latest.end() && !find_job(s->second, active);
        const ActiveJob* gone = gone_from_queue ? find_job(s->second, ended) : nullptr;
        // A job Slurm preempted before its ranks wrote a record (in its set-up lines, MPI's start-up, the data's
        // load): no record of that job says preempted, Slurm's final state does; the run was left missing, or
        // preempted by an earlier job's record, exit 1 (a hunt, a review). It is submitted again (from the earlier
        // job's checkpoint where there is one); its next job is another submission, so this state is read once.
        if (gone && gone->state == "PREEMPTED" && resubmitted[run] < kResubmissions &&
            (it.state == RunState::missing ||
             (it.state == RunState::preempted && steps_by_latest_job(record_path(l, *it.run), s->second) < 0))) {
          ++resubmitted[run], ++n;
          continue;
        }
        bool resubmit = it.state == RunState::preempted && gone_from_queue && resubmitted[run] < kResubmissions;
        if (resubmit) {
          if (gone && gone->state == "CANCELLED") cancelled.insert(run);
          resubmit = !cancelled.count(run);
          if (!resubmit && said.insert(run).second)
            out << (tty ? "\n" : "") << "  " << run << ": preempted, not submitted again: its job " << job_label(s->second)
                << " was cancelled (scancel), not preempted by Slurm; a sweep with --submit resumes it" << std::endl;
        }
        if (resubmit) {
          const int64_t steps = steps_by_latest_job(record_path(l, *it.run), s->second);
          const auto before = steps_before.find(run);
          resubmit = steps >= 0 && (before == steps_before.end() || steps > before->second);
          if (resubmit) steps_before[run] = steps;
          else if (said.insert(run).second)
            out << (tty ? "\n" : "") << "  " << run << ": preempted, not submitted again: "
                << (steps < 0 ? "its record is not its latest job's (job " + job_label(s->second) + " wrote none)"
                              : "its latest job got no further than step " + std::to_string(steps))
                << std::endl;
        }
        if (resubmit) ++resubmitted[run], ++n;
        else it.state = RunState::queued;  // not this submission's business
      }
      if (n > 0) {
        if (tty) out << "\n";
        out << "  " << count(n, "run") << " preempted after " << (n == 1 ? "its job" : "their jobs")
            << " left the queue: submitting again, to resume from the checkpoint where there is one" << std::endl;
        run_submit(again, points, l, arrays, out);
        latest = latest_submissions(l.out / "jobs.json");
        last_line.clear();
        // The queue asked before the new jobs were queued would say none is left: ask again after a poll.
        std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_seconds));
        continue;
      }
    }
    std::map<std::string, size_t> states;
    size_t live = 0;
    for (const auto& [run, s] : latest) {
      if (const ActiveJob* a = find_job(s, active)) {
        states[shown_state(*a)]++;
        ++live;
      }
    }
    std::ostringstream line;
    line << "waiting: " << latest.size() << " jobs, ";
    if (live == 0) line << "none queued";
    for (const auto& [st, c] : states) line << c << " " << st << (st == states.rbegin()->first ? "" : ", ");
    line << "; records: " << state_summary(items);
    double t = sw.seconds();
    if (line.str() != last_line || t - last_print >= 60) {
      std::string text = "[" + std::to_string(static_cast<long>(t)) + " s] " + line.str();
      if (tty) out << "\r\033[K" << text << std::flush;
      else out << text << std::endl;
      last_line = line.str();
      last_print = t;
    }
    if (live == 0) break;
    if (o.timeout_seconds > 0 && t > o.timeout_seconds) {
      if (tty) out << "\n";
      throw RunFailed("--wait: jobs still queued after " + std::to_string(static_cast<long>(o.timeout_seconds)) + " s");
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_seconds));
  }
  if (tty) out << "\n";
}

// A folder without campaign.json is this campaign's only where its spec.json is the copy a first run of the same
// campaign wrote before it was stopped (spec.json is written first, campaign.json last). Elsewhere the files the
// sweep would write over (spec.json, configs, scripts, records, jobs.json) are someone else's: a sweep into a
// user's folder replaced their spec.json and configs with exit 0 (found by a hunt).
void check_files_are_the_campaigns(const Spec& spec, const std::vector<Point>& points, const Layout& l, bool arrays) {
  std::error_code ec;
  if (fs::exists(l.out / "campaign.json", ec)) return;
  const fs::path spec_copy = l.out / "spec.json";
  if (fs::exists(spec_copy, ec)) {
    bool ours = false;
    try {
      const Json was = read_json_file(spec_copy.string(), "spec");
      ours = was.is_object() && was.contains("name") && was["name"] == Json(spec.name);  // (a pbt's: check_campaign_kind)
    } catch (const BadInput&) {
    }
    if (ours) return;
    throw BadInput(spec_copy.string() + ": this folder has no campaign.json, and its spec.json is not a copy of "
                   "campaign '" + spec.name + "''s spec; the sweep would replace it: use another --out");
  }
  std::vector<fs::path> files = campaign_files(points, l, arrays);
  files.push_back(l.out / "jobs.json");
  for (const Point& p : points)
    for (const Run& r : p.runs) files.push_back(record_path(l, r));
  for (const fs::path& f : files)
    if (fs::exists(fs::symlink_status(f, ec)))
      throw BadInput(f.string() + ": this folder has no campaign.json and no spec.json, so this file is not the "
                     "campaign's; the sweep would replace or read it: use another --out");
}

// sbatch starts a heterogeneous job's next component at an #SBATCH line holding "hetjob" or "packjob": a campaign
// named "hetjob-study" (its job names) or a folder of that name (its output paths) split every job in two, the
// second component taking the later lines (found by a review). Every script is made here, before anything is written.
void check_single_jobs(const Spec& spec, const std::vector<Point>& points, const Layout& l, bool arrays,
                       const std::string& spec_file) {
  std::set<std::string> parsed;  // each list of set-up lines is parsed once
  const auto check = [&](const std::string& script, const Json& setup, const std::string& what) {
    if (const std::string line = heterogeneous_job_line(script); !line.empty())
      throw BadInput(spec_file + ": " + what + "'s script would hold the line '" + line + "', which sbatch reads as "
                     "the start of a heterogeneous job's next component (\"hetjob\" or \"packjob\" in an #SBATCH "
                     "line): rename the campaign (/name), its folder (--out) or the value, or change /slurm/sbatch");
    if (!setup.empty() && parsed.insert(setup.dump()).second)
      if (const std::string why = script_syntax_problem(script); !why.empty())
        throw BadInput(spec_file + ": /slurm/setup: bash cannot parse " + what + "'s script with these set-up lines (" +
                       why + "): an unterminated quote, or an if, loop or here-document left open?");
  };
  if (arrays) {
    const auto groups = array_groups(points);
    for (size_t g = 0; g < groups.size(); ++g)
      check(array_script(spec, groups[g], g, l), groups[g].slurm["setup"], "job array " + std::to_string(g));
  } else {
    for (const Point& p : points)
      for (const Run& r : p.runs) check(run_script(spec, p, r, l), p.slurm["setup"], "run " + r.name);
  }
}

}  // namespace

void run_sweep(const SweepOptions& o, std::ostream& out) {
  if (o.local && o.submit) throw BadInput("--local and --submit exclude each other");
  if (o.wait && !o.submit) throw BadInput("--wait waits for submitted jobs: give --submit as well");
  if (o.jobs < 1) throw BadInput("--jobs: at least 1, got " + std::to_string(o.jobs));
  if (o.jobs > 1 && !o.local) throw BadInput("--jobs runs local runs at once: give --local as well");
  // Taken silently before (a hunt): no job array is submitted by a local sweep.
  if (o.array && o.local) throw BadInput("--array groups runs into Slurm job arrays, and --local runs them here: drop one of them");
  if (o.out.empty()) throw BadInput("--out: give the campaign folder, e.g. --out results/my-campaign");
  fs::path outdir = fs::absolute(fs::path(o.out)).lexically_normal();
  // The whole path: a relative --out under a working folder with a line break failed on the first #SBATCH line,
  // after spec.json, a config and the lock were written.
  if (has_control_chars(outdir.string()))
    throw BadInput("--out: line breaks and control characters are not allowed in the folder's path (" +
                   Json(outdir.string()).dump() + ")");
  if (outdir.has_filename() == false) outdir = outdir.parent_path();  // "dir/" -> "dir"
  check_output_folder(outdir, "--out " + o.out, !o.dry_run);  // a file, a file above it, or a folder that cannot be written
  if (const std::string e = slurm_folder_error(outdir, "--out " + o.out); !e.empty()) throw BadInput(e);

  Layout l = make_layout(outdir, {}, generated_by());
  // The spec and its base config file are input: one where the sweep writes (its index, jobs file, a config, a script
  // or a record) would be replaced by what it writes, with exit 0. The spec's copy, DIR/spec.json, may be the spec
  // (it is written as it is read), never the base (a base config there was replaced by the spec; found by a hunt).
  const std::string copy = " (the campaign keeps a copy of the spec, its base inlined, as " +
                           (outdir / "spec.json").string() + ")";
  const std::vector<fs::path> folders = {l.configs, l.scripts, l.runs};
  check_input_not_written(o.spec, "the spec", folders, {outdir / "campaign.json", outdir / "jobs.json"}, "the sweep",
                          copy);
  Spec spec = load_spec(o.spec);
  if (!spec.base_file.empty())
    check_input_not_written(spec.base_file, "the spec's base config (/base)", folders,
                            {outdir / "campaign.json", outdir / "jobs.json", outdir / "spec.json"}, "the sweep", copy);
  l.program = spec.program.empty() ? default_program() : spec.program;
  std::vector<Point> points;
  try {
    points = expand(spec, l.runs, /*on_slurm_nodes=*/!o.local);
  } catch (const BadInput& e) {
    throw BadInput(o.spec + ": " + e.what());
  }
  // A folder holds one campaign: another spec's would replace its spec.json and campaign.json (pbt refuses alike),
  // and another kind's (a pbt campaign, a reproduction) would get a sweep beside it.
  check_campaign_kind(outdir, "campaign.json");
  if (fs::is_regular_file(outdir / "campaign.json")) {
    const CampaignIndex earlier = read_campaign_index(outdir / "campaign.json");
    if (earlier.name != spec.name)
      throw BadInput((outdir / "campaign.json").string() + ": this folder holds campaign '" + earlier.name +
                     "', not '" + spec.name + "': use another --out");
  }
  bool arrays = o.array || spec.slurm["array"].get<bool>();
  // A GPU run submitted without a GPU request gets a node's CPUs only, and every job would fail on the trainer's
  // device check; --local runs on this machine's GPUs, with no Slurm request.
  // Also a dry run without --local, which shows the Slurm plan (it printed the scripts that --submit then refused;
  // a hunt).
  if (o.submit || (o.dry_run && !o.local))
    for (const Point& p : points)
      if (!p.runs.empty() && p.runs.front().config.value("backend", "") == "gpu" &&
          p.slurm["gpus_per_node"].get<int64_t>() == 0 && p.slurm["gpus_per_task"].get<int64_t>() == 0 &&
          !gres_is_gpu(p.slurm["gres"].get<std::string>())) {
        const std::string at = spec_pointer(p, "/backend", spec.base);
        throw BadInput(o.spec + ": " + at + ": \"gpu\" runs need GPUs from Slurm: set /slurm/gpus_per_node, "
                       "/slurm/gpus_per_task or /slurm/gres (point " + p.id + ")");
      }
  // The launcher is input too: refused before anything is queried or written (exit 2 writes nothing).
  require_launcher(o.local, o.submit);
  // --local starts the program here: one that is not there would fail every run (under --submit it runs on the
  // compute nodes, which may see other files than this one).
  if (o.local && !spec.program.empty() && !on_path(spec.program[0]))
    throw BadInput(o.spec + ": /program/0: '" + spec.program[0] + "' is not an executable file here (--local runs it on this machine)");
  std::vector<Item> items = survey(points, l);
  // A failed run's record moves to runs/failed/ before the rerun: a file there, or a folder that cannot be made,
  // failed after the campaign was rewritten ("internal error", exit 1).
  if (std::any_of(items.begin(), items.end(), [](const Item& it) { return it.state == RunState::failed; }))
    check_output_folder(l.runs / "failed", "--out " + o.out, !o.dry_run);

  check_campaign_paths(points, l, arrays, "--out " + o.out, !o.dry_run);
  check_files_are_the_campaigns(spec, points, l, arrays);
  check_single_jobs(spec, points, l, arrays, o.spec);
  if (o.local && (!o.dry_run || o.check_as_run)) {
    // More ranks than the slots mpirun counts: every run failed after the campaign was written (exit 1).
    std::vector<int> ranks;
    size_t todo = 0;
    for (const Item& it : items)
      if (needs_run(it.state)) ranks.push_back(it.point->ranks), ++todo;
    const int runners = static_cast<int>(std::min(todo, static_cast<size_t>(local_jobs(spec, o.jobs))));
    if (const std::string why = mpirun_slots_refusal(runner_cpus(spec, std::max(runners, 1)), ranks, local_mpirun_args(spec),
                                                     mpi_session_base(l.out, "probe", 0));
        !why.empty())
      throw BadInput(o.spec + ": " + why + "; add \"--oversubscribe\" to /local/mpirun_args" +
                     (runners > 1 ? ", or give fewer --jobs" : ""));
  }
  if (o.submit && (!o.dry_run || o.check_as_run)) test_requests(spec, items, points, l, arrays, o.spec);

  // One sweep at a time per folder, from here (every input checked) to its end: two at once each submitted every run
  // (jobs.json listed each twice, the second set failed on the first's MLLOG lock, and one sweep reported the runs
  // missing), and their updates of jobs.json could lose each other's.
  std::optional<DirLock> lock;
  if (!o.dry_run) {
    std::error_code ec;
    fs::create_directories(outdir, ec);
    if (ec) throw BadInput("--out " + o.out + ": cannot create " + outdir.string() + ": " + ec.message());
    lock.emplace(outdir / ".lock", "another dtbench sweep (or reproduce) works on this folder; wait for it to end");
  }

  // Runs whose earlier job is still pending or running are left alone. The queue is asked first, then the records
  // read again (under the lock: another sweep's runs may have ended since the first reading): a job that ends
  // between the two is seen done, where records read first and the queue after saw it neither and submitted it again.
  std::map<std::string, Submission> latest;
  std::vector<ActiveJob> active;
  // --local asks it too where the campaign was submitted before and Slurm is here: its dry run did, and said such runs
  // were skipped, while the run itself ran them beside their jobs (found by a hunt).
  if (o.submit || ((o.dry_run || o.local) && input_exists(l.out / "jobs.json", "job list") && on_path("squeue"))) {
    latest = latest_submissions(l.out / "jobs.json");
    try {
      if (!latest.empty()) active = query_queue();
    } catch (const RunFailed& e) {
      // A dry run only shows the plan: a queue it cannot ask (slurmctld down) is said, not fatal (a run, --local
      // included, must know which jobs still run its points: exit 1).
      if (!o.dry_run) throw;
      out << "  (the queue could not be asked: " << e.what() << "; runs of earlier jobs are shown as their records "
          << "say)\n";
    }
  }
  if (lock) items = survey(points, l, false, &items);
  for (auto& it : items) {
    auto s = latest.find(it.run->name);
    if (s != latest.end() && needs_run(it.state) && find_job(s->second, active)) {
      it.state = RunState::queued;
      it.detail = "job " + job_label(s->second) + " still queued";
    }
  }
  // A queued job reads its run's config file when it starts, or starts again: a rerun with an edited spec rewrote the
  // file under it, so a pending or requeued job trained the new config, and the running one's record was refused as
  // "made from a different config" in the middle of the wait, exit 2 after the jobs had run (found by a hunt). Such a
  // rerun is refused here, before anything is written.
  for (const auto& it : items) {
    const fs::path file = config_path(l, *it.run);
    if (it.state != RunState::queued || !input_exists(file, "run config")) continue;
    if (const std::string where = config_difference(read_json_file(file.string(), "run config"), it.run->config);
        !where.empty())
      throw BadInput(file.string() + ": run " + it.run->name + "'s " + it.detail + " with this config, which the spec "
                     "now gives otherwise (first difference at " + where + "); wait for the job to end or scancel it, "
                     "or use another --out");
  }

  size_t runs_per_point = static_cast<size_t>(spec.repeats);
  out << "sweep " << Json(spec.name).dump() << ": " << count(points.size(), "point") << " x "
      << count(runs_per_point, "repeat") << " = " << count(items.size(), "run") << " in " << l.out.string() << "\n";
  auto counts = count_states(items);
  if (counts[RunState::done])
    out << "  skipping " << count(counts[RunState::done], "run")
        << " whose records are complete\n";
  if (counts[RunState::queued])
    out << "  skipping " << count(counts[RunState::queued], "run")
        << " whose jobs are still queued\n";
  if (counts[RunState::preempted]) {
    // A preempted run without its checkpoint (an asynchronous run keeps none) starts again; a synchronous one whose
    // checkpoint is gone counts as failed (record_state).
    const size_t kept = static_cast<size_t>(std::count_if(items.begin(), items.end(), [&](const Item& it) {
      std::error_code ec;
      return it.state == RunState::preempted && fs::exists(beside_record(record_path(l, *it.run), ".ckpt"), ec);
    }));
    if (kept)
      out << "  resuming " << count(kept, "preempted run") << (kept == 1 ? " from its checkpoint\n" : " from their checkpoints\n");
    if (kept < counts[RunState::preempted])
      out << "  restarting " << count(counts[RunState::preempted] - kept, "preempted run")
          << " from the start (no checkpoint)\n";
  }
  if (counts[RunState::failed])
    out << "  " << (o.local || o.submit ? "retrying " : "to run again: ") << count(counts[RunState::failed], "failed run")
        << " (old records move to runs/failed/)\n";
  size_t todo = counts[RunState::missing] + counts[RunState::preempted] + counts[RunState::failed];
  out << "  " << count(todo, "run") << " to do" << std::endl;
  if (o.local && todo > 1 && local_jobs(spec, o.jobs) < o.jobs)
    out << "  at most " << local_jobs(spec, o.jobs) << " at once (the spec's /local/max_jobs)" << std::endl;

  if (o.dry_run) {
    out << "dry run: nothing is written or started\n";
    if (o.local && todo > 0) {
      const std::string base = mpi_session_base(l.out, "sweep", 0);
      const int runners = static_cast<int>(std::min(todo, static_cast<size_t>(local_jobs(spec, o.jobs))));
      out << "  each run under env OMPI_MCA_orte_tmpdir_base=" << base.substr(0, base.size() - 2)
          << "NN, NN its runner (00-" << std::setw(2) << std::setfill('0') << runners - 1 << std::setfill(' ') << ")"
          << ", Open MPI's other parameters that place session files empty";
      const std::vector<std::string> cpus = runner_cpus(spec, runners);
      if (runners > 1 && cpus.front().empty()) {
        out << "; the ranks where /local/mpirun_args place them";
      } else if (runners > 1) {
        out << "; taskset --cpu-list (mpirun --bind-to none), each runner its CPUs:";
        for (int w = 0; w < runners; ++w) out << (w ? ", " : " ") << std::setw(2) << std::setfill('0') << w
                                              << std::setfill(' ') << ": " << cpus[static_cast<size_t>(w)];
      }
      out << "\n";
    }
    for (const auto& it : items) {
      if (!needs_run(it.state)) {
        out << "  " << it.run->name << ": " << to_string(it.state) << (it.detail.empty() ? "" : " (" + it.detail + ")") << "\n";
        continue;
      }
      if (o.local) {
        out << "  would run: " << display_line(local_argv(spec, l, it)) << "\n";
      } else if (!arrays) {
        out << "  would submit: sbatch --parsable " << display_word(script_path(l, *it.run).string()) << "\n";
      }
    }
    if (!o.local) {
      if (arrays) {
        auto groups = array_groups(points);
        for (size_t g = 0; g < groups.size(); ++g) {
          std::string list;
          for (size_t t = 0; t < groups[g].runs.size(); ++t)
            for (const auto& it : items)
              if (it.run == groups[g].runs[t] && needs_run(it.state)) list += (list.empty() ? "" : ",") + std::to_string(t);
          if (list.empty()) continue;
          out << "  would submit: sbatch --parsable --array=" << list << " "
              << display_word(array_script_path(l, g).string()) << "\n----- " << array_script_path(l, g).string()
              << "\n" << array_script(spec, groups[g], g, l) << "-----\n";
        }
      } else {
        for (const auto& it : items)
          if (needs_run(it.state))
            out << "----- " << script_path(l, *it.run).string() << "\n" << run_script(spec, *it.point, *it.run, l) << "-----\n";
      }
    }
    // --wait is accepted with a dry run of --submit (the same command line, tried first): say what it would do.
    if (o.submit && o.wait)
      out << "  then would wait for the jobs (--wait: polling every " << o.poll_seconds << " s"
          << (o.timeout_seconds > 0 ? ", for at most " + std::to_string(static_cast<long>(o.timeout_seconds)) + " s" : "")
          << ")\n";
    return;
  }

  // A sweep killed while writing left its temporary files; the rerun counted them as "not written by this sweep"
  // (found by a hunt). Only the sweep writes these folders and files, and it holds the lock.
  remove_left_temporaries(l.configs);
  remove_left_temporaries(l.scripts);
  remove_left_temporaries(l.out, {"spec.json", "campaign.json", "jobs.json"});
  write_campaign(spec, points, l, arrays);
  for (auto& it : items)
    if (it.state == RunState::failed) {
      fs::path to = move_failed_record(l, *it.run);
      out << "  moved the failed record of " << it.run->name << " to " << to.string() << "\n";
    }
  out << "wrote " << count(items.size(), "config") << " and "
      << (arrays ? count(array_groups(points).size(), "job-array script") : count(items.size(), "sbatch script"))
      << " under " << l.out.string() << std::endl;
  // A rerun with an edited spec (same name) leaves the earlier spec's configs and scripts where they were; the index
  // no longer lists them, but a script there would still run an old point if submitted by hand: said, not removed.
  {
    const std::vector<fs::path> written = campaign_files(points, l, arrays);
    const std::set<fs::path> ours(written.begin(), written.end());
    size_t others = 0;
    for (const fs::path& dir : {l.configs, l.scripts}) {
      std::error_code ec;
      for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (!ours.count(it->path())) ++others;
    }
    if (others)
      out << "  " << count(others, "file") << " under configs/ and scripts/ " << (others == 1 ? "was" : "were")
          << " not written by this sweep (an earlier spec's, or of the other script mode): left in place; "
             "campaign.json lists this sweep's runs only"
          << std::endl;
  }

  if (o.local) {
    run_local(spec, items, l, o.jobs, lock ? lock->fd() : -1, out);
    final_report(points, l, out);
    return;
  }
  if (o.submit) {
    run_submit(items, points, l, arrays, out);
    if (o.wait) {
      wait_for_jobs(o, points, l, arrays, out);
      final_report(points, l, out);
    }
    return;
  }
  out << "submit with: dtbench sweep " << display_word(o.spec) << " --out " << display_word(o.out)
      << " --submit [--wait]   (or run here: --local)" << std::endl;
}

void add_sweep_command(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  auto* cmd = app.add_subcommand("sweep", "Expand an experiment spec into runs; write sbatch scripts, submit, wait, or run locally");
  cmd->add_option("spec", o->spec, "Experiment spec (JSON): base config, axes, zip, repeats, slurm")
      ->required()
      ->check(cli::non_empty);
  cmd->add_option("--out", o->out, "Campaign folder (configs, scripts, records)")->required();
  cmd->add_flag("--submit", o->submit, "Submit every run that is not done with sbatch and record the job ids");
  auto* wait = cmd->add_flag("--wait", o->wait, "With --submit: wait until every job has finished, printing progress");
  cmd->add_flag("--local", o->local, "Run the points here with mpirun (no Slurm), one after another unless --jobs");
  cmd->add_option("--jobs", o->jobs, "With --local: how many runs at once, each its own mpirun (default 1)")
      ->capture_default_str();
  cmd->add_flag("--dry-run", o->dry_run, "Print what would be submitted or run; write nothing");
  cmd->add_flag("--array", o->array, "One job array per Slurm resource set instead of one script per run");
  // CLI::Range let nan through (every comparison with it is false; found by a hunt).
  auto* poll = cmd->add_option("--poll", o->poll_seconds, "Seconds between queue polls with --wait")
                   ->check(cli::number_check([](double v) { return v >= 0.1 && v <= 3600; }, "in [0.1, 3600]",
                                             "SECONDS"));
  auto* timeout = cmd->add_option("--timeout", o->timeout_seconds, "Give up waiting after this many seconds (0 = never)")
                      ->check(cli::timeout_seconds);
  // Without --wait nothing is polled or waited for (they were taken silently; found by a hunt).
  poll->needs(wait);
  timeout->needs(wait);
  cmd->callback([o] {
    run_sweep(*o, std::cout);
  });
}

}  // namespace dtbench
