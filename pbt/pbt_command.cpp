#include "pbt/pbt_command.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "config/run_config.hpp"
#include "core/cli_checks.hpp"
#include "core/atomic_file.hpp"
#include "core/bounded_pool.hpp"
#include "core/dir_lock.hpp"
#include "core/error.hpp"
#include "core/regular_file.hpp"
#include "core/run_record.hpp"
#include "core/timer.hpp"
#include "core/pbt_lineage.hpp"
#include "core/checkpoint_files.hpp"
#include "pbt/population.hpp"
#include "pbt/spec.hpp"
#include "slurm/campaign.hpp"
#include "slurm/process.hpp"
#include "slurm/shell.hpp"
#include "slurm/sbatch_script.hpp"

namespace dtbench {
namespace fs = std::filesystem;
using pbt::Lineage;

namespace {

struct Args {
  std::string spec;
  std::string out;
  bool dry_run = false;
  bool submit = false;         // members as Slurm jobs (sbatch), polled until they leave the queue
  double poll_seconds = 2;
  double timeout_seconds = 0;  // per interval with --submit; 0 = never give up
};

// What member m trains in the next interval: its hyperparameters and the run whose checkpoint it continues.
struct Plan {
  Json hyperparameters;
  std::string init_from;  // empty: start from scratch (the first interval)
  bool diverged = false;  // random search: the member diverged earlier and is not trained further
};

std::vector<Plan> first_plans(const pbt::Spec& spec) {
  std::vector<Plan> plans;
  for (int m = 0; m < spec.population; ++m) {
    Rng rng = pbt::stream(spec, -1, m);  // "ready point -1": the initial draw
    plans.push_back({pbt::sample(spec, rng), ""});
  }
  return plans;
}

// The plans the last recorded interval's events leave.
std::vector<Plan> next_plans(const Lineage& l) {
  const pbt::Interval& last = l.intervals.back();
  std::vector<Plan> plans;
  for (const pbt::MemberInterval& m : last.members) plans.push_back({m.hyperparameters, m.run, m.status == "diverged"});
  for (const pbt::Event& e : last.events)
    plans[size_t(e.member)] = {e.after, last.members.at(size_t(e.from)).run, false};
  return plans;
}

// The campaign's lock (core/dir_lock) is held by the member processes trained here too: they inherit its
// descriptor (run_here), so the lock is held until the last of them has exited, and a rerun cannot start while
// members of a killed campaign still write their files. Nothing else does (close-on-exec): a squeue or sbatch that
// outlived a killed campaign by a moment would refuse a rerun, and so would the Open MPI daemon a 1-rank member
// starts (MpiSession marks what a member inherited close-on-exec).
const char* const kBusy = "another dtbench pbt, or member runs of one that ended, still work on this folder; wait for them";

// Each member its own Open MPI session folder (slurm::mpi_session_base): members start and end side by side.
std::string session_base(const fs::path& dir, int member) { return slurm::mpi_session_base(dir, "pbt", member); }

// One member's interval and where its files are. An earlier attempt's outputs decide what happens to them:
// a finished record is reused; a preempted run (record "preempted", its checkpoint written) is resumed, as a
// sweep resumes it; anything else is removed and the interval trained again from its start.
struct MemberRun {
  enum class Attempt { reuse, resume, fresh };
  pbt::MemberInterval result;
  Attempt attempt = Attempt::fresh;
  fs::path config, record, ckpt, out, err;
  std::vector<std::string> args;  // after the config and --resume: --stop-at N [--init-from CKPT]
  RecordFile earlier;
  std::uintmax_t out_offset = 0;  // with --submit: the size of `out` when its latest job was submitted
};

// Whether a member's earlier attempt at an interval counts as its result: a finished record with its checkpoint,
// or one that diverged (which keeps none).
bool finished_attempt(const RunRecord* rec, const fs::path& record) {
  return rec && rec->done() &&
         (rec->status == RunStatus::diverged ||
          input_exists(beside_record(record, ".ckpt") / "header.json", "member's checkpoint header"));
}

MemberRun prepare_member(const pbt::Spec& spec, const fs::path& dir, int m, int64_t interval, int64_t end_step,
                         const Plan& plan, bool leave_files) {
  MemberRun r;
  r.result.member = m;
  r.result.run = pbt::run_name(m, interval);
  r.result.init_from = plan.init_from;
  r.result.hyperparameters = plan.hyperparameters;
  const fs::path runs = dir / "runs";
  r.config = dir / "configs" / (r.result.run + ".json");
  r.record = runs / (r.result.run + ".json");
  r.ckpt = beside_record(r.record, ".ckpt");
  r.out = runs / (r.result.run + ".out");
  r.err = runs / (r.result.run + ".err");
  r.args = {"--stop-at", std::to_string(end_step)};
  if (!plan.init_from.empty())
    r.args.insert(r.args.end(), {"--init-from", beside_record(runs / (plan.init_from + ".json"), ".ckpt").string()});
  if (leave_files) return r;  // its Slurm job is still queued: it owns them
  r.earlier = input_exists(r.record, "member's record") ? read_run_record(r.record) : RecordFile{};
  const RunRecord* rec = r.earlier.record ? &*r.earlier.record : nullptr;
  // A finished attempt of an interrupted campaign counts.
  if (finished_attempt(rec, r.record)) {
    r.attempt = MemberRun::Attempt::reuse;
    return r;
  }
  if (rec && rec->status == RunStatus::preempted && input_exists(r.ckpt / "header.json", "member's checkpoint header")) {
    r.attempt = MemberRun::Attempt::resume;
  } else {
    std::error_code ec;
    for (const char* ext : {".json", ".weights", ".mllog"}) fs::remove(runs / (r.result.run + ext), ec);
    fs::remove_all(r.ckpt, ec);
  }
  write_json_atomic(r.config, pbt::member_config(spec, plan.hyperparameters, m, r.result.run, runs), false);
  return r;
}

// Before an interval trains: the records an earlier `dtbench pbt` left that the members would take as theirs (a
// finished one reused, a preempted one resumed) must have been made from the config each member would run now, as
// a sweep's runs must (slurm::record_state): a record the spec did not make (written by hand, or by a dtbench whose
// config has keys this one resolves otherwise) would otherwise be taken as this member's result. All are checked
// before any member trains, so that a mismatch is exit 2 with nothing written (a failed record is trained again).
// `queued`: the runs whose Slurm job an earlier pbt --submit left in the queue; their own checkpoint may be being
// written by that job, so it is not read (a review: a header naming files just replaced read as damaged).
void check_earlier_records(const pbt::Spec& spec, const fs::path& dir, int64_t interval, const std::vector<Plan>& plans,
                           const std::set<std::string>& queued) {
  const fs::path runs = dir / "runs";
  // Records of later intervals are never an earlier attempt's to reuse: a campaign records an interval before the
  // next one trains, so they are left by a lineage.json removed or restored from an older copy. The intervals
  // retrained before them may choose otherwise, and such a record was reused under a plan that did not make it
  // (another ancestor, other hyperparameters; a hunt).
  for (int64_t later = interval + 1; later < spec.intervals(); ++later)
    for (int m = 0; m < spec.population; ++m) {
      const fs::path record = runs / (pbt::run_name(m, later) + ".json");
      std::error_code ec;
      if (fs::symlink_status(record, ec).type() != fs::file_type::not_found)
        throw BadInput(record.string() + ": a record of interval " + std::to_string(later) + ", but " +
                       (dir / "lineage.json").string() + " records " + std::to_string(interval) +
                       (interval == 1 ? " interval" : " intervals") + " (removed, or restored from an older copy?): "
                       "the campaign would take it for a member's result that its plan may not make; restore "
                       "lineage.json, or use another --out");
    }
  std::set<fs::path> verified;  // each checkpoint read once, however many members continue from it
  for (int m = 0; m < spec.population; ++m) {
    if (plans[size_t(m)].diverged) continue;
    const std::string run = pbt::run_name(m, interval);
    const fs::path record = runs / (run + ".json");
    const RecordFile f = input_exists(record, "member's record") ? read_run_record(record) : RecordFile{};
    // One that cannot be read was removed with the member's checkpoint and the interval trained again, where train
    // refuses it (found by a hunt): it is said, and nothing trains.
    if (!f.record && !f.problem.empty())
      throw BadInput(f.problem + " (member " + std::to_string(m) + "'s record of interval " + std::to_string(interval) +
                     "): restore it, or remove it and its checkpoint to train the interval again");
    // A member that trains continues from the checkpoint its plan names: one that is gone (a lineage.json older
    // than the runs, restored from a copy: the campaign deletes an interval's checkpoints once the next is
    // recorded) failed every member after their finished records were removed, exit 1; a hunt.
    const std::string& from = plans[size_t(m)].init_from;
    const std::string member = "member " + std::to_string(m) + "'s interval " + std::to_string(interval);
    if (!finished_attempt(f.record ? &*f.record : nullptr, record) && !from.empty()) {
      const fs::path ckpt = beside_record(runs / (from + ".json"), ".ckpt");
      if (!input_exists(ckpt / "header.json", "member's checkpoint header"))
        throw BadInput(ckpt.string() + ": missing; " + member + " continues from it (" + (dir / "lineage.json").string() +
                       " records " + std::to_string(interval) + " intervals: is it older than runs/?); restore it, "
                       "or use another --out");
      // And whole: a damaged one failed the member, which was replaced, exit 0 (a hunt).
      try {
        if (verified.insert(ckpt).second) verify_checkpoint(ckpt);
      } catch (const BadInput& e) {
        throw BadInput(std::string(e.what()) + " (" + member + " continues from it); restore it, or use another --out");
      }
    }
    // A preempted attempt resumes from its own checkpoint, which must be whole too; and a finished one that is reused
    // leaves its checkpoint to the next interval's members, which failed on a damaged one and were replaced, exit 0,
    // and the damaged file deleted with the interval (a hunt).
    const fs::path own = beside_record(record, ".ckpt");
    const bool reused = finished_attempt(f.record ? &*f.record : nullptr, record) &&
                        f.record->status != RunStatus::diverged && interval + 1 < spec.intervals();
    if (f.record && (f.record->status == RunStatus::preempted || reused) && !queued.count(run) &&
        input_exists(own / "header.json", "member's checkpoint header"))
      try {
        verify_checkpoint(own);
      } catch (const BadInput& e) {
        throw BadInput(std::string(e.what()) + " (" + member +
                       (reused ? ", finished: the next interval continues from it" : " resumes from it") +
                       "); restore it, or remove it and the record to train the interval again");
      }
    const bool kept = f.record && (f.record->done() || f.record->status == RunStatus::preempted);
    if (!kept) continue;
    std::string state;
    slurm::record_state(record, config::resolve(pbt::member_config(spec, plans[size_t(m)].hyperparameters, m, run, runs),
                                                static_cast<int>(spec.ranks)),
                        state, spec.ranks);
  }
}

// A run that ended preempted (record "preempted", checkpoint written): it resumes, as a sweep's run does, at most
// kMaxResumes times an interval (a run preempted at every start is a failure).
constexpr int kMaxResumes = 3;
constexpr int kMaxSlurmResumes = 20;  // Slurm members: with the progress rule of train_on_slurm
bool ended_preempted(const MemberRun& r) {
  std::error_code ec;  // after the member ran (as member_result below)
  if (!fs::exists(r.record, ec) || !fs::exists(r.ckpt / "header.json", ec)) return false;
  const RecordFile f = read_run_record(r.record);
  return f.record && f.record->status == RunStatus::preempted;
}

// The member's result from its record (read once it has run). exit_code: the launcher's, or -1 unknown.
pbt::MemberInterval collect_member(MemberRun& r, int64_t end_step, int exit_code) {
  pbt::MemberInterval out = r.result;
  const bool reused = r.attempt == MemberRun::Attempt::reuse;
  out.exit_code = reused ? 0 : exit_code;
  std::error_code ec;  // after the member ran: what is not there as a record is a failed member, not bad input
  const RecordFile rf = reused ? r.earlier : fs::exists(r.record, ec) ? read_run_record(r.record) : RecordFile{};
  const RunRecord* rec = rf.record ? &*rf.record : nullptr;
  if (out.exit_code == 0 && rec && rec->status == RunStatus::diverged) {
    out.status = "diverged";  // a legitimate outcome: no evaluation to compare, no checkpoint to continue
    out.wall_seconds = rec->wall_seconds;
    return out;
  }
  // Completed, or reached eval.target_accuracy (a member keeps training past its target).
  const bool ok = out.exit_code == 0 && rec &&
                  (rec->status == RunStatus::completed || rec->status == RunStatus::reached_target) &&
                  !rec->curve.empty() && rec->curve.back().step == end_step && fs::exists(r.ckpt / "header.json", ec);
  out.status = ok ? "completed" : "failed";
  if (ok) {
    out.test_accuracy = rec->curve.back().test_accuracy;
    out.validation_accuracy = rec->curve.back().validation_accuracy;
    out.wall_seconds = rec->wall_seconds;
  } else if (out.exit_code == 0 || out.exit_code < 0) {
    out.exit_code = 1;  // ran, but left no usable record (a missing checkpoint), or its exit status is unknown
  }
  return out;
}

std::vector<std::string> mpirun_args(const pbt::Spec& spec) {
  std::vector<std::string> args;
  for (const Json& w : spec.local["mpirun_args"]) args.push_back(w.get<std::string>());
  return args;
}

// Here: `env OMPI_MCA_orte_tmpdir_base=... [[taskset --cpu-list CPUS] mpirun -np K [--bind-to none] ARGS...]
// PROGRAM... CONFIG --resume ARGS...`, tied to this process (SIGUSR1 when it dies: the member checkpoints as
// preempted and a rerun resumes it; mpirun forwards SIGUSR1 to the ranks, where SIGTERM would make it kill them).
// `cpus`: the CPUs of the pool thread that runs a multi-rank member (slurm::runner_cpus), as a sweep's runner has:
// Open MPI binds a job of 1 or 2 ranks to the first cores, so concurrent members all ran on the same ones.
int run_here(const pbt::Spec& spec, const fs::path& dir, const MemberRun& r, const std::vector<std::string>& program,
             int lock_fd, const std::string& cpus) {
  std::vector<std::string> argv;
  if (spec.ranks > 1) {
    argv = slurm::mpirun_on(cpus, spec.ranks);
    for (const std::string& w : mpirun_args(spec)) argv.push_back(w);
  }
  argv.insert(argv.end(), program.begin(), program.end());
  argv.insert(argv.end(), {r.config.string(), "--resume"});
  argv.insert(argv.end(), r.args.begin(), r.args.end());
  return slurm::run_to_files(slurm::in_mpi_session(session_base(dir, r.result.member), argv), r.out, r.err, SIGUSR1,
                             lock_fd);
}

// The exit code the job script printed last ("launcher exited with N") after byte `offset` of its output (where
// the latest job's output begins; earlier attempts' come before), -1 when it printed none (a job cancelled before
// its launch).
int job_exit_code(const fs::path& out, std::uintmax_t offset) {
  std::ifstream in(out);
  in.seekg(static_cast<std::streamoff>(offset));
  const std::string mark = "launcher exited with ";
  int code = -1;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(mark);
    if (at == std::string::npos) continue;
    try {
      code = std::stoi(line.substr(at + mark.size()));
    } catch (const std::exception&) {
      code = -1;
    }
  }
  return code;
}

void train_here(const pbt::Spec& spec, const fs::path& dir, int64_t i, int64_t end_step, const std::vector<Plan>& plans,
                const std::vector<std::string>& program, int lock_fd, pbt::Interval& iv) {
  // Each member on the next free thread of a bounded pool, a multi-rank member on that thread's CPUs. 1-rank members
  // (no mpirun) are not placed: each is one process the kernel spreads; pinned with taskset, one of them trained on
  // through its campaign's Ctrl-C in 3 of 5 runs of pbt.campaign beside other tests (cause not found).
  const std::vector<std::string> cpus =
      spec.ranks > 1 ? slurm::runner_cpus(mpirun_args(spec), std::min(spec.population, spec.concurrency))
                     : std::vector<std::string>(static_cast<size_t>(std::max(spec.concurrency, 1)));
  for_each_bounded(size_t(spec.population), spec.concurrency, [&](size_t mi, int worker) {
    const int m = static_cast<int>(mi);
    if (plans[mi].diverged) return;
    MemberRun r = prepare_member(spec, dir, m, i, end_step, plans[mi], false);
    int rc = 0;
    if (r.attempt != MemberRun::Attempt::reuse) {
      rc = run_here(spec, dir, r, program, lock_fd, cpus[static_cast<size_t>(worker)]);
      for (int resumes = 0; rc == 3 && resumes < kMaxResumes && ended_preempted(r); ++resumes) {
        std::printf("member %d: preempted in interval %lld; resuming from its checkpoint\n", m,
                    static_cast<long long>(i));
        std::fflush(stdout);
        rc = run_here(spec, dir, r, program, lock_fd, cpus[static_cast<size_t>(worker)]);
      }
    }
    iv.members[mi] = collect_member(r, end_step, rc);
  });
}

// Polls the queue until none of `waiting`'s latest jobs is in it, printing the count of each job state as it
// changes. Returns the ended jobs with their final states, as every poll saw them (slurm::query_queue): Slurm
// remembers one for MinJobAge only, and a member cancelled early was gone from the last poll's list when the others
// ran longer (a review).
std::vector<slurm::ActiveJob> wait_for_jobs(const Args& a, int64_t i, const std::vector<std::string>& waiting,
                                            const std::map<std::string, slurm::Submission>& latest) {
  if (waiting.empty()) return {};
  std::printf("interval %lld: %zu member job%s in the queue\n", static_cast<long long>(i), waiting.size(),
              waiting.size() == 1 ? "" : "s");
  std::fflush(stdout);
  Stopwatch sw;
  std::string last;
  std::map<std::string, slurm::ActiveJob> seen_ended;  // by job id (an array task's own)
  const auto ended_so_far = [&] {
    std::vector<slurm::ActiveJob> v;
    for (const auto& [id, j] : seen_ended) v.push_back(j);
    return v;
  };
  for (;;) {
    // Asked again while squeue fails, but not past --timeout (as the sweep's wait).
    std::vector<slurm::ActiveJob> ended;
    const std::vector<slurm::ActiveJob> active =
        slurm::query_queue(slurm::queue_patience(a.timeout_seconds, sw.seconds()), &std::cout, &ended);
    for (const slurm::ActiveJob& j : ended) seen_ended[j.job_id] = j;
    std::map<std::string, int> states;
    size_t live = 0;
    for (const std::string& run : waiting)
      if (const slurm::ActiveJob* j = slurm::find_job(latest.at(run), active)) states[slurm::shown_state(*j)]++, ++live;
    if (live == 0) return ended_so_far();
    std::string line;
    for (const auto& [state, n] : states) line += (line.empty() ? "" : ", ") + std::to_string(n) + " " + state;
    if (line != last) {
      std::printf("[%.0f s] interval %lld: %s\n", sw.seconds(), static_cast<long long>(i), line.c_str());
      std::fflush(stdout);
      last = line;
    }
    if (a.timeout_seconds > 0 && sw.seconds() > a.timeout_seconds)
      throw RunFailed("--timeout: member jobs of interval " + std::to_string(i) + " still queued after " +
                      std::to_string(static_cast<long>(a.timeout_seconds)) + " s; rerun to wait for them");
    std::this_thread::sleep_for(std::chrono::duration<double>(a.poll_seconds));
  }
}

// A job of this member's script that Slurm holds though jobs.json does not list it: its dtbench pbt died
// between sbatch and the jobs.json line (DIR/runs/<run>.submitting, written before sbatch and removed after
// the line, says so). Found by job name and batch script (squeue %o, the script's path); "" when none.
// Found by its script's path, which only this member's job runs (squeue's -n JOB_NAME split a campaign name with a
// comma into two names and found nothing; a review).
std::string unlisted_job(const fs::path& script) {
  std::istringstream lines(slurm::squeue_output("%A|%o", slurm::kQueuePatienceSeconds, &std::cout));
  for (std::string line; std::getline(lines, line);) {
    const size_t bar = line.find('|');
    if (bar != std::string::npos && line.substr(bar + 1) == script.string()) return line.substr(0, bar);
  }
  return "";
}

// With --submit: every member interval not finished is an sbatch job (DIR/scripts/<run>.sbatch, the sweeps'
// script: --requeue, USR1 before the time limit, --resume), all of an interval submitted at once; then the queue
// is polled until none of them is left in it. A member whose job an earlier `dtbench pbt --submit` left queued is
// waited for, not submitted again, whether jobs.json lists it or the earlier process died before listing it.
void train_on_slurm(const Args& a, const pbt::Spec& spec, const fs::path& dir, int64_t i, int64_t end_step,
                    const std::vector<Plan>& plans, const std::vector<std::string>& program, pbt::Interval& iv) {
  const slurm::Layout l = slurm::make_layout(dir, program, slurm::generated_by());
  const fs::path jobs = dir / "jobs.json";
  auto latest = slurm::latest_submissions(jobs);
  std::vector<slurm::ActiveJob> active =
      latest.empty() ? std::vector<slurm::ActiveJob>{} : slurm::query_queue(slurm::kQueuePatienceSeconds, &std::cout);
  std::vector<MemberRun> runs(size_t(spec.population));
  std::vector<std::string> waiting;  // runs whose jobs are in the queue
  std::vector<int> to_submit;        // members to submit
  fs::create_directories(l.scripts);
  for (int m = 0; m < spec.population; ++m) {
    if (plans[size_t(m)].diverged) continue;
    const std::string run = pbt::run_name(m, i);
    const fs::path marker = dir / "runs" / (run + ".submitting");
    if (fs::exists(marker)) {
      const fs::path script = l.scripts / (run + ".sbatch");
      const std::string id = unlisted_job(script);
      if (!id.empty()) {
        std::printf("member %d: job %s was submitted by an earlier dtbench pbt that did not list it; listed now\n", m,
                    id.c_str());
        slurm::append_submissions(jobs, {{run, id, -1}}, script.lexically_relative(dir).string());
        latest[run] = {run, id, -1};
        active = slurm::query_queue(slurm::kQueuePatienceSeconds, &std::cout);
      }
      fs::remove(marker);
    }
    const auto s = latest.find(run);
    const bool queued = s != latest.end() && slurm::find_job(s->second, active);
    MemberRun& r = runs[size_t(m)] = prepare_member(spec, dir, m, i, end_step, plans[size_t(m)], queued);
    if (queued) {
      std::printf("member %d: job %s of an earlier dtbench pbt is still queued; waiting for it\n", m,
                  s->second.job_id.c_str());
      r.attempt = MemberRun::Attempt::resume;
      waiting.push_back(run);
      continue;
    }
    if (r.attempt != MemberRun::Attempt::reuse) to_submit.push_back(m);
  }
  std::vector<int> resumes(size_t(spec.population), 0);
  std::vector<int64_t> steps_before(size_t(spec.population), -1);  // the steps of the attempt last resubmitted
  std::map<int, std::string> cancelled;  // members whose job its user cancelled -> the job, each said once
  for (;;) {
    for (const int m : to_submit) {
      const MemberRun& r = runs[size_t(m)];
      const std::string& run = r.result.run;
      slurm::JobScript j;
      j.comments = {"dtbench pbt, campaign " + Json(spec.name).dump() + ": member " + std::to_string(m) +
                        ", interval " + std::to_string(i) + " (to step " + std::to_string(end_step) + ")",
                    "Written by " + l.generated_by + ". dtbench pbt submits it and reads its record."};
      j.job_name = spec.name + "/" + run;
      j.slurm = spec.slurm;
      j.out = r.out, j.err = r.err, j.config = r.config, j.extra_args = r.args;
      const fs::path script = l.scripts / (run + ".sbatch");
      slurm::write_script(script, slurm::job_script(j, l));
      std::error_code ec;
      const std::uintmax_t size = fs::file_size(r.out, ec);  // absent before the first job
      runs[size_t(m)].out_offset = ec ? 0 : size;
      const fs::path marker = dir / "runs" / (run + ".submitting");
      write_file_atomic(marker, "", false);  // until jobs.json lists the job: a rerun then looks for it
      const std::string id = slurm::submit_job({"sbatch", "--parsable", script.string()});
      slurm::append_submissions(jobs, {{run, id, -1}}, script.lexically_relative(dir).string());
      fs::remove(marker);
      latest[run] = {run, id, -1};
      waiting.push_back(run);
    }
    const std::vector<slurm::ActiveJob> ended = wait_for_jobs(a, i, waiting, latest);
    // A job that left the queue preempted (PreemptMode=CANCEL, a time limit without Slurm's requeue) resumes in a
    // new job, as a sweep's --wait resubmits: when that job wrote the record and got further than the attempt before,
    // at most kMaxSlurmResumes times (3, without the progress rule, made a member cancelled 4 times while it
    // progressed a failure of "exit 1"; found by a hunt). Not a job its user cancelled (scancel), as in the sweep.
    to_submit.clear();
    waiting.clear();
    for (int m = 0; m < spec.population; ++m) {
      MemberRun& r = runs[size_t(m)];
      if (plans[size_t(m)].diverged || r.attempt == MemberRun::Attempt::reuse) continue;
      // By the record, not the exit code: a cancelled job's batch shell may die before it prints one.
      const std::string run = pbt::run_name(m, i);
      const int64_t steps = latest.count(run) ? slurm::steps_by_latest_job(r.record, latest.at(run)) : -1;
      const slurm::ActiveJob* gone = latest.count(run) ? slurm::find_job(latest.at(run), ended) : nullptr;
      // Cancelled whether or not the member wrote a record (pending, or in its set-up): a failure then, replaced.
      if (cancelled.count(m) || (gone && gone->state == "CANCELLED")) {
        if (cancelled.emplace(m, latest.at(run).job_id).second)
          std::printf("member %d: preempted, not submitted again: its job %s was cancelled (scancel), not preempted "
                      "by Slurm\n", m, latest.at(run).job_id.c_str());
        continue;
      }
      // Preempted by Slurm before it wrote a record (its set-up, MPI's start-up): submitted again as it was, as the
      // sweep's --wait does; its next job is another submission, so this preemption is read once.
      if (resumes[size_t(m)] < kMaxSlurmResumes && gone && gone->state == "PREEMPTED" && steps < 0) {
        ++resumes[size_t(m)];
        std::printf("member %d: its job was preempted before it wrote a record; submitting it again\n", m);
        to_submit.push_back(m);
        continue;
      }
      if (resumes[size_t(m)] < kMaxSlurmResumes && ended_preempted(r) && steps > steps_before[size_t(m)]) {
        steps_before[size_t(m)] = steps;
        ++resumes[size_t(m)];
        r.attempt = MemberRun::Attempt::resume;
        std::printf("member %d: its job ended preempted; submitting it again to resume from its checkpoint\n", m);
        to_submit.push_back(m);
      }
    }
    if (to_submit.empty()) break;
  }
  // A user's scancel is no failure of the member's training: recorded as one, the member was replaced and the
  // campaign went on with exit 0 (a hunt). The interval is left unfinished, as a sweep's --wait leaves such a run
  // (exit 1); the next dtbench pbt --submit resumes the member from its checkpoint and reuses the others' results.
  if (!cancelled.empty()) {
    std::string which;
    for (const auto& [m, job] : cancelled)
      which += (which.empty() ? "" : ", ") + std::string("member ") + std::to_string(m) + " (job " + job + ")";
    throw RunFailed("interval " + std::to_string(i) + " is left unfinished: the job of " + which + " was cancelled "
                    "(scancel); run dtbench pbt again with --submit to resume from the checkpoint");
  }
  for (int m = 0; m < spec.population; ++m) {
    if (plans[size_t(m)].diverged) continue;
    MemberRun& r = runs[size_t(m)];
    iv.members[size_t(m)] = collect_member(r, end_step, r.attempt == MemberRun::Attempt::reuse ? 0 : job_exit_code(r.out, r.out_offset));
  }
}

// Run here, a campaign must not have member jobs left in Slurm's queue: they would write the same files.
void refuse_if_queued(const fs::path& dir) {
  const auto latest = slurm::latest_submissions(dir / "jobs.json");
  if (latest.empty() || !slurm::on_path("squeue")) return;
  const std::vector<slurm::ActiveJob> active = slurm::query_queue();
  for (const auto& [run, s] : latest)
    if (slurm::find_job(s, active))
      throw BadInput(dir.string() + ": member " + run + "'s Slurm job " + s.job_id +
                     " is still queued; continue with --submit, or wait for it");
}

int run_pbt(const Args& a) {
  const pbt::Spec spec = pbt::load_spec(a.spec);  // BadInput (exit 2) before anything is written
  if (a.out.empty()) throw BadInput("--out: an empty folder name");
  const fs::path dir = fs::absolute(a.out);
  const fs::path lineage_file = dir / "lineage.json";
  std::optional<DirLock> lock;
  Lineage l;
  // A folder holds one campaign: a sweep's or a reproduction's would have its spec.json replaced, or get one beside it.
  check_campaign_kind(dir, "lineage.json");
  check_output_folder(dir, "--out", !a.dry_run);  // a file, a file above it, or a folder that cannot be written
  if (const std::string e = slurm::slurm_folder_error(dir, "--out"); a.submit && !e.empty()) throw BadInput(e);
  for (const char* sub : {"runs", "configs"})  // a file where the campaign's folders go was an internal error
    check_output_folder(dir / sub, "--out", !a.dry_run);
  // The spec and its base config file are input: inside runs/ or configs/, or as lineage.json, a member's config or
  // the lineage replaced them (exit 0; found by a hunt). The spec may be DIR/spec.json (compared below), the base not.
  check_input_not_written(a.spec, "the spec", {dir / "runs", dir / "configs"}, {lineage_file}, "pbt");
  if (!spec.base_file.empty())
    check_input_not_written(spec.base_file, "the spec's base config (/base)", {dir / "runs", dir / "configs"},
                            {lineage_file, dir / "spec.json"}, "pbt");
  if (input_exists(lineage_file, "lineage")) {
    l = pbt::read_lineage(lineage_file);
    if (l.spec != spec.source)
      throw BadInput(lineage_file.string() + ": this folder holds the campaign of another spec (they differ at " +
                     first_difference(l.spec, spec.source) + "); use another --out");
    // What the lineage derives from its spec must be what the spec gives (a hand-edited file would otherwise index
    // members it does not hold, or write a lineage it cannot read back).
    const std::pair<const char*, bool> same[] = {
        {"name", l.name == spec.name}, {"mode", l.mode == spec.mode}, {"population", l.population == spec.population},
        {"ready_steps", l.ready_steps == spec.ready_steps}, {"total_steps", l.total_steps == spec.total_steps},
        {"seed", l.seed == spec.seed}, {"select_on", l.select_on == spec.select_on}};
    for (const auto& [key, equal] : same)
      if (!equal)
        throw BadInput(lineage_file.string() + ": /" + key + " differs from what the campaign's spec gives; the file "
                       "was edited (restore it, or use another --out)");
  } else {
    // A campaign stopped in its first interval has a spec.json and runs but no lineage yet: another spec's rerun
    // would take its finished runs as its own.
    if (fs::is_regular_file(dir / "spec.json")) {
      if (const Json was = read_json_file((dir / "spec.json").string(), "pbt spec"); was != spec.source)
        throw BadInput((dir / "spec.json").string() + ": this folder holds the campaign of another spec (they differ at " +
                       first_difference(was, spec.source) + "); use another --out");
    } else {
      // Without spec.json (written before anything else) the folder is no campaign's: files where the campaign
      // writes its own are a user's, which it would replace or read as its members' (as a sweep refuses them).
      std::error_code ec;
      for (const char* sub : {"configs", "runs", "scripts"})
        if (fs::is_directory(dir / sub, ec) && !fs::is_empty(dir / sub, ec))
          throw BadInput((dir / sub).string() + ": this folder has no spec.json or lineage.json, so the files in " + sub +
                         "/ are not the campaign's; the campaign would replace or read them: use another --out");
      if (fs::exists(fs::symlink_status(dir / "jobs.json", ec)))
        throw BadInput((dir / "jobs.json").string() + ": this folder has no spec.json or lineage.json, so this file is "
                       "not the campaign's; use another --out");
    }
    l.name = spec.name, l.mode = spec.mode, l.population = spec.population;
    l.ready_steps = spec.ready_steps, l.total_steps = spec.total_steps, l.seed = spec.seed, l.spec = spec.source;
    l.select_on = spec.select_on;
  }
  const std::vector<std::string> program =
      spec.program.empty() ? std::vector<std::string>{slurm::dtbench_binary(), "train"} : spec.program;
  // Members run here start the program on this machine: one that is not there failed every member (under --submit it
  // runs on the compute nodes, as a sweep's does).
  if (!a.submit && !spec.program.empty() && !slurm::on_path(spec.program[0]))
    throw BadInput(a.spec + ": /program/0: '" + spec.program[0] + "' is not an executable file here (members run on "
                   "this machine without --submit)");
  std::vector<Plan> plans = l.intervals.empty() ? first_plans(spec) : next_plans(l);
  // Only the first interval this process trains can find records of an earlier one (the later ones' are its own).
  if (static_cast<int64_t>(l.intervals.size()) < spec.intervals()) {
    std::set<std::string> queued;
    if (a.submit && !a.dry_run) {
      const auto latest = slurm::latest_submissions(dir / "jobs.json");
      const std::vector<slurm::ActiveJob> active =
          latest.empty() ? std::vector<slurm::ActiveJob>{} : slurm::query_queue(slurm::kQueuePatienceSeconds, &std::cout);
      for (const auto& [run, s] : latest)
        if (slurm::find_job(s, active)) queued.insert(run);
    }
    check_earlier_records(spec, dir, static_cast<int64_t>(l.intervals.size()), plans, queued);
  }

  const std::string where = a.submit ? "Slurm jobs of " + std::to_string(spec.ranks) + " rank" + (spec.ranks == 1 ? "" : "s")
                                     : std::to_string(spec.concurrency) + " at a time here, " + std::to_string(spec.ranks) +
                                           " rank" + (spec.ranks == 1 ? "" : "s") + " each";
  std::printf("%s: %s, %d members, %lld intervals of %lld steps (%lld steps each), %s\n", spec.name.c_str(),
              spec.mode == "pbt" ? "population-based training" : "random search", spec.population,
              static_cast<long long>(spec.intervals()), static_cast<long long>(spec.ready_steps),
              static_cast<long long>(spec.total_steps), where.c_str());
  if (a.dry_run) {
    // The interval a run would start with: a finished campaign trains nothing (its last interval's members were
    // printed as if they would train; found by a hunt), a continued one its next interval.
    const int64_t next = static_cast<int64_t>(l.intervals.size());
    if (next >= spec.intervals()) {
      std::printf("  finished: lineage.json holds all %lld intervals; nothing to train\n",
                  static_cast<long long>(spec.intervals()));
      return 0;
    }
    // Numbered from 0, as the run's lines, lineage.json and `dtbench table` number them (it said "interval 1 of 2"
    // for the run's "interval 0"; a hunt).
    std::printf("  interval %lld (steps %lld-%lld; intervals 0 to %lld) would train:\n", static_cast<long long>(next),
                static_cast<long long>(next * spec.ready_steps),
                static_cast<long long>(std::min((next + 1) * spec.ready_steps, spec.total_steps)),
                static_cast<long long>(spec.intervals() - 1));
    for (int m = 0; m < spec.population; ++m)
      std::printf("  member %d: %s\n", m, plans[size_t(m)].hyperparameters.dump().c_str());
    return 0;
  }
  if (a.submit && (!slurm::on_path("sbatch") || !slurm::on_path("squeue")))
    throw BadInput("--submit needs sbatch and squeue on PATH (is this a Slurm login node?)");
  if (!a.submit && spec.ranks > 1 && !slurm::on_path("mpirun"))
    throw BadInput("members of " + std::to_string(spec.ranks) + " ranks (/slurm) run here with mpirun, which is not on "
                   "PATH (Open MPI: scripts/setup.sh installs it); or use --submit");
  if (!a.submit && spec.ranks > 1)  // more ranks than mpirun's slots failed every member, interval after interval
    if (const std::string why = slurm::mpirun_slots_refusal(
            slurm::runner_cpus(mpirun_args(spec), std::min(spec.population, spec.concurrency)), {static_cast<int>(spec.ranks)},
            mpirun_args(spec), slurm::mpi_session_base(dir, "probe", 0));
        !why.empty())
      throw BadInput(a.spec + ": " + why + "; add \"--oversubscribe\" to /local/mpirun_args" +
                     (spec.concurrency > 1 ? ", or lower /local/concurrency" : ""));
  if (a.submit) {  // Slurm judges the members' request before anything is written or queued (a partition that does
                   // not exist failed at the first sbatch, exit 1, leaving the campaign and a .submitting marker)
    slurm::JobScript j;
    j.job_name = spec.name + "/" + pbt::run_name(0, 0);
    j.slurm = spec.slurm;
    j.out = dir / "runs" / (pbt::run_name(0, 0) + ".out"), j.err = dir / "runs" / (pbt::run_name(0, 0) + ".err");
    j.config = dir / "configs" / (pbt::run_name(0, 0) + ".json");
    const std::string script = slurm::job_script(j, slurm::make_layout(dir, program, slurm::generated_by()));
    if (const std::string line = slurm::heterogeneous_job_line(script); !line.empty())
      throw BadInput(a.spec + ": the members' scripts would hold the line '" + line + "', which sbatch reads as the "
                     "start of a heterogeneous job's next component (\"hetjob\" or \"packjob\" in an #SBATCH line): "
                     "rename the campaign (/name) or its folder (--out), or change /slurm/sbatch");
    if (const std::string why = slurm::script_syntax_problem(script); !why.empty())
      throw BadInput(a.spec + ": /slurm/setup: bash cannot parse the members' script with these set-up lines (" + why +
                     "): an unterminated quote, or an if, loop or here-document left open?");
    const std::string refused = slurm::sbatch_refuses(script);
    if (!refused.empty()) throw BadInput(a.spec + ": /slurm: Slurm refuses the members' request: " + refused);
    if (spec.slurm["launcher"] == "srun")
      if (const std::string why = slurm::srun_lacks_mpi(slurm::srun_mpi_plugins(), spec.slurm["mpi"].get<std::string>());
          !why.empty())
        throw BadInput(a.spec + ": /slurm/mpi: " + why);
  }
  fs::create_directories(dir / "runs");
  lock.emplace(dir / ".lock", kBusy);  // one campaign process per folder
  if (!a.submit) refuse_if_queued(dir);
  fs::create_directories(dir / "configs");
  write_json_atomic(dir / "spec.json", spec.source, false);

  for (int64_t i = static_cast<int64_t>(l.intervals.size()); i < spec.intervals(); ++i) {
    pbt::Interval iv;
    iv.index = i;
    iv.start_step = i * spec.ready_steps;
    iv.end_step = std::min((i + 1) * spec.ready_steps, spec.total_steps);
    iv.members.resize(size_t(spec.population));
    for (int m = 0; m < spec.population; ++m) {  // a diverged random-search member is not trained further
      pbt::MemberInterval& mi = iv.members[size_t(m)];
      mi.member = m, mi.hyperparameters = plans[size_t(m)].hyperparameters, mi.status = "diverged";
    }
    if (a.submit)
      train_on_slurm(a, spec, dir, i, iv.end_step, plans, program, iv);
    else
      train_here(spec, dir, i, iv.end_step, plans, program, lock->fd(), iv);

    std::vector<double> scores;
    for (const pbt::MemberInterval& m : iv.members) {
      scores.push_back(m.status == "diverged" ? -HUGE_VAL : l.score(m) ? *l.score(m) : std::nan(""));
      if (m.status == "failed") {
        // A job cancelled while pending (or that failed before the member started) left no output: said so, rather
        // than an empty reason after an exit code the member never gave (found by a hunt).
        std::string why = slurm::tail_of(dir / "runs" / (m.run + ".err"), 400);
        std::error_code ec;
        if (why.find_first_not_of(" \n\t") == std::string::npos)
          why = a.submit && !fs::exists(dir / "runs" / (m.run + ".json"), ec)
                    ? "no record and no error output: its job ended before the member started (cancelled while "
                      "pending, or failed at its launch), and Slurm's output names no exit code (the lineage counts 1)"
                    : "no error output";
        std::fprintf(stderr, "dtbench pbt: member %d failed in interval %lld (run %s, exit %d): %s\n", m.member,
                     static_cast<long long>(i), m.run.c_str(), m.exit_code, why.c_str());
      }
    }
    // Not one evaluation: nothing to select from, nor a result. The interval is not recorded, so that a rerun
    // tries its runs again (a diverged run's record is reused: it diverges again).
    if (std::none_of(scores.begin(), scores.end(), [](double v) { return std::isfinite(v); }))
      throw RunFailed("population-based training: no member has an evaluation at ready point " + std::to_string(i) +
                      " (every run failed or diverged)");
    if (i + 1 < spec.intervals()) {  // the last ready point ends the campaign: nothing to select
      Rng select_rng = pbt::stream(spec, i, spec.population);
      const std::vector<int> source = pbt::select(spec, scores, select_rng);
      for (int m = 0; m < spec.population; ++m) {
        const int from = source[size_t(m)];
        if (from == m) continue;
        pbt::Event e;
        e.kind = std::isnan(scores[size_t(m)]) ? "replace_failed" : std::isinf(scores[size_t(m)]) ? "replace_diverged" : "exploit";
        e.member = m;
        e.from = from;
        e.before = iv.members[size_t(m)].hyperparameters;
        Rng rng = pbt::stream(spec, i, m);
        e.after = pbt::explore(spec, iv.members[size_t(from)].hyperparameters, rng);
        e.exit_code = iv.members[size_t(m)].exit_code;
        iv.events.push_back(std::move(e));
      }
    }
    l.intervals.push_back(std::move(iv));
    pbt::write_lineage(lineage_file, l);
    // The previous interval's checkpoints: every member of this one has continued from them.
    if (i > 0) {
      std::error_code ec;
      for (const pbt::MemberInterval& m : l.intervals[size_t(i) - 1].members)
        if (!m.run.empty()) fs::remove_all(beside_record(dir / "runs" / (m.run + ".json"), ".ckpt"), ec);
    }
    plans = next_plans(l);
    const pbt::Interval& done = l.intervals.back();
    const int best = l.best_member();
    std::printf("interval %lld (steps %lld-%lld): best member %d at %.4f (%s), %zu replaced, %d failed, %d diverged\n",
                static_cast<long long>(i), static_cast<long long>(done.start_step), static_cast<long long>(done.end_step),
                best, best >= 0 ? *l.score(done.members[size_t(best)]) : 0.0, l.select_on.c_str(), done.events.size(),
                static_cast<int>(std::count_if(done.members.begin(), done.members.end(),
                                               [](const pbt::MemberInterval& m) { return m.status == "failed"; })),
                static_cast<int>(std::count_if(done.members.begin(), done.members.end(),
                                               [](const pbt::MemberInterval& m) { return m.status == "diverged"; })));
    std::fflush(stdout);
  }
  for (int m = 0; m < spec.population; ++m) {
    std::error_code ec;
    fs::remove_all(session_base(dir, m), ec);
  }
  const int best = l.best_member();
  if (best >= 0) {
    const pbt::MemberInterval& b = l.intervals.back().members[size_t(best)];
    std::printf("best: member %d, test accuracy %.4f", best, b.test_accuracy ? *b.test_accuracy : 0.0);
    if (b.validation_accuracy) std::printf(", validation accuracy %.4f", *b.validation_accuracy);
    std::printf(" (%s; ranked on %s); lineage %s\n", b.run.c_str(), l.select_on.c_str(), lineage_file.string().c_str());
  }
  return 0;
}

}  // namespace

void add_pbt_command(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("pbt", "Population-based training: a population of dtbench train runs, exploited and "
                                        "explored at every ready point (Jaderberg et al. 2017)");
  cmd->add_option("spec", a->spec, "PBT spec (JSON; pbt/spec.hpp)")->required()->check(cli::non_empty);
  cmd->add_option("--out", a->out, "Campaign folder (created; rerun on it to continue)")->required();
  cmd->add_flag("--dry-run", a->dry_run, "Validate the spec and print the members of the interval a run would train next; write nothing");
  auto* submit = cmd->add_flag("--submit", a->submit,
                "Train each member interval as a Slurm job (sbatch, the spec's /slurm section) and wait for them");
  auto* poll = cmd->add_option("--poll", a->poll_seconds, "Seconds between queue polls with --submit")
      ->check(cli::number_check([](double v) { return v >= 0.1 && v <= 3600; }, "in [0.1, 3600] seconds", "SECONDS"));
  auto* timeout = cmd->add_option("--timeout", a->timeout_seconds,
                  "With --submit: give up (exit 1) when an interval's jobs are still queued after this many seconds; "
                  "0 = never")
      ->check(cli::timeout_seconds);
  // Without --submit nothing is polled or waited for: taken silently before (found by a hunt).
  poll->needs(submit);
  timeout->needs(submit);
  cmd->callback([a] {
    const int code = run_pbt(*a);
    if (code != 0) throw ExitRequest(code);
  });
}

}  // namespace dtbench
