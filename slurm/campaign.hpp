// A campaign folder (dtbench sweep --out DIR):
//
//   DIR/spec.json       the spec as given (a base config file inlined)
//   DIR/campaign.json   the index (core/campaign_index.hpp): axes, points, runs and their files
//                       (paths relative to DIR); `dtbench table` and analysis/plot.py read it
//   DIR/configs/        one resolved run config per run (<run>.json)
//   DIR/scripts/        one sbatch script per run (<run>.sbatch) or per job array (array-<k>.sbatch)
//   DIR/runs/           records (<run>.json), :::MLLOG logs, checkpoints, Slurm output and error
//   DIR/runs/failed/    records of failed attempts, moved aside when the run is tried again
//   DIR/jobs.json       every submission: run, job id, array task, time, script
//
// Rerunning a sweep on the same DIR redoes only what is missing: a run whose record is done
// (RunRecord::done: completed, reached-target or diverged) is skipped; a preempted run resumes from its
// checkpoint; a failed run is tried again; a run whose Slurm job is still pending or running is
// left alone.
#pragma once

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <map>
#include <string>
#include <vector>

#include "core/campaign_index.hpp"
#include "core/json.hpp"
#include "slurm/expand.hpp"
#include "slurm/sbatch_script.hpp"
#include "slurm/spec.hpp"

namespace dtbench::slurm {

enum class RunState { missing, done, preempted, failed, queued };
std::string to_string(RunState s);

// What a run's record says. `detail` receives the record's status (and status_detail when set).
// Throws BadInput when the record cannot be read (read_run_record's reason), or was made from a
// different config than `expected` (the /output section aside), naming the first differing key, or on another rank
// count than `expected_ranks` (when > 0): a campaign folder holds one spec's runs.
// `polling` (--wait's loop, after jobs were queued): a record that cannot be examined (a network file system's
// hiccup) is "not there yet" rather than bad input naming it.
// A finished run's weights file (output.save_weights) is read whole and checked, except while polling or when
// `weights_checked` says an earlier look at this same record did so (a sweep's start looks twice: before its lock
// and under it; a ResNet-50's weights are about 100 MB).
RunState record_state(const std::filesystem::path& record, const Json& expected, std::string& detail,
                      int64_t expected_ranks = 0, bool polling = false, bool weights_checked = false);

// The campaign index (campaign.json) of these points.
CampaignIndex campaign_index(const Spec& spec, const std::vector<Point>& points, const Layout& l, bool arrays);

// The files write_campaign writes: spec.json, campaign.json, every run's config, and its sbatch script or (with
// `arrays`) the job-array scripts.
std::vector<std::filesystem::path> campaign_files(const std::vector<Point>& points, const Layout& l, bool arrays);

// What write_campaign would write, checked before anything is: its folders are folders (or can be made) and its
// files regular files where they exist. BadInput naming the path and `option` (a folder where a config goes, or a
// file where the runs' folder goes, was found mid-write, after the spec, the lock and some configs were written).
void check_campaign_paths(const std::vector<Point>& points, const Layout& l, bool arrays, const std::string& option,
                          bool writable);

// Writes spec.json, campaign.json, every run config and every script (replacing earlier versions).
void write_campaign(const Spec& spec, const std::vector<Point>& points, const Layout& l, bool arrays);

// Writes a job script atomically, executable (0755).
void write_script(const std::filesystem::path& path, const std::string& text);

// Moves a failed run's record aside to runs/failed/<run>.<UTC time>.json.
std::filesystem::path move_failed_record(const Layout& l, const Run& r);

// One sbatch submission: of a run, or of one task of a job array.
struct Submission {
  std::string run;
  std::string job_id;       // the id sbatch printed (the array's id for array tasks)
  int64_t array_task = -1;  // task index within the array, -1 for a plain job
};
// The job as Slurm's commands take it: "123" for a plain job, "123_4" for task 4 of array 123 (an array's id alone
// is every task of it).
std::string job_label(const Submission& s);
std::vector<Submission> read_submissions(const std::filesystem::path& jobs_json);
void append_submissions(const std::filesystem::path& jobs_json, const std::vector<Submission>& subs,
                        const std::string& script);
// The latest submission of each run (run -> submission), from jobs.json (empty when it does not exist).
std::map<std::string, Submission> latest_submissions(const std::filesystem::path& jobs_json);

// A job as squeue lists it: from `squeue -h -o %A|%F|%K|%T|%r` (or without the reason). Task ranges such as "0-5"
// or "1,3%2" of pending arrays are expanded.
struct ActiveJob {
  std::string job_id;     // %A
  std::string array_id;   // %F
  std::vector<int64_t> tasks;  // %K expanded; empty for a plain job
  std::string state;      // %T
  std::string reason;     // %r: why a job waits ("Priority", "JobHeldAdmin", "PartitionTimeLimit"); "" if not given
};
std::vector<ActiveJob> parse_squeue(const std::string& text);

// Whether `state` (squeue's %T) is one a job ends in: COMPLETED, CANCELLED, FAILED, TIMEOUT, PREEMPTED, NODE_FAIL,
// BOOT_FAIL, DEADLINE, OUT_OF_MEMORY (slurm.h's base states from JOB_COMPLETE), and REVOKED (a federation's sibling
// job, whose cluster ran another copy). Any other, one this list does not
// know included, is a job still in the queue (pending, running, completing, suspended, requeued...).
bool is_final_state(const std::string& state);

// The state as the progress lines show it: with the reason when it is not an ordinary wait (Priority, Resources),
// so that a job held, or over a partition's limit, is seen waiting for something that may never come.
std::string shown_state(const ActiveJob& a);

// The steps a run's record reached when the job of submission `s` wrote it (its provenance names the job:
// SLURM_JOB_ID, or the array's id and task), else -1 (no record, another job's, none of Slurm's): a record of an
// earlier attempt says nothing of the latest job, which may have been cancelled while pending or failed before it
// trained (a review: such a run was submitted again and again). sweep --wait and pbt resubmit a preempted run only
// on a record of its latest job that got further than the attempt before.
int64_t steps_by_latest_job(const std::filesystem::path& record, const Submission& s);

// The job of submission `s` among `jobs`, or nullptr: among query_queue's jobs, nullptr when it has left the queue.
const ActiveJob* find_job(const Submission& s, const std::vector<ActiveJob>& active);

// The jobs Slurm holds now: squeue_argv's (--all: a hidden partition's jobs looked finished; whole task lists: past
// 64 bytes squeue cut them with "...", and the tasks cut off were submitted again).
// A failed squeue is asked again for up to `patience_s` seconds (a busy controller times out now and then; one
// failure ended --wait), then RunFailed.
// Each failure asked again is said on `log` when given (a wait that looked hung).
// `ended`, when given, receives the jobs that have left the queue but that Slurm still remembers (MinJobAge, 300 s
// by default), with their final state: without accounting (sacct), that is where a job its user cancelled
// (CANCELLED) tells itself from one Slurm preempted (PREEMPTED) or stopped at its time limit (TIMEOUT).
std::vector<ActiveJob> query_queue(double patience_s = 0, std::ostream* log = nullptr,
                                   std::vector<ActiveJob>* ended = nullptr);
// How long a wait may ask a failing squeue again: 5 minutes, but not past its --timeout (`timeout_s` > 0, of which
// `elapsed_s` have passed; at least 1 s).
constexpr double kQueuePatienceSeconds = 300;
constexpr double kSqueueCallSeconds = 60;  // the most one squeue call may take (squeue_output)
inline double queue_patience(double timeout_s, double elapsed_s) {
  return timeout_s > 0 ? std::min(kQueuePatienceSeconds, std::max(1.0, timeout_s - elapsed_s)) : kQueuePatienceSeconds;
}
// What squeue_argv(format, ended_too) prints, asked again as query_queue asks.
std::string squeue_output(const std::string& format, double patience_s = 0, std::ostream* log = nullptr,
                          bool ended_too = false);

// The job id in what `sbatch --parsable` printed: the last line that is "ID" or "ID;cluster", or "Submitted batch
// job ID" (a site's wrapper may print a banner first, or drop --parsable). "" when there is none.
std::string sbatch_job_id(const std::string& printed);

// Every option an #SBATCH line's words give, in order: its long name ("--mem 4G", "--constr=x" as an unambiguous
// prefix, "-C x") and how the line wrote it ("--constr", "-C"). sbatch reads every option of a line, and bundled
// letters as getopt does ("-HN3": --hold, then --nodes with 3): an entry's later options got past the checks made on
// its first (found by a hunt). A word that is an option's argument is passed over.
struct SbatchLineOption {
  std::string name, written;
};
std::vector<SbatchLineOption> sbatch_line_options(const std::string& words);
// The first of them's long name, or "" for words that give none.
std::string sbatch_line_option(const std::string& words);
// The SBATCH_* variables set in this environment that would override a line of `script` (sbatch takes the
// environment over the script's #SBATCH lines), and SBATCH_WAIT and SBATCH_ARRAY_INX whenever set.
std::vector<std::string> overriding_sbatch_variables(const std::string& script);
// The command words that run sbatch on `script` without those variables ("env -u NAME ..."; none when none is set),
// saying once on standard error which were left out. submit_job and sbatch_refuses put them before "sbatch".
std::vector<std::string> sbatch_environment(const std::string& script);
// squeue's command words for `-o FORMAT` over the whole queue: --all, array task lists unshortened
// (SLURM_BITSTR_LEN=0), the user's SQUEUE_* filters left out, the clusters SBATCH_CLUSTERS names when SLURM_CLUSTERS
// (which squeue reads) is not set; with `ended_too`, the jobs that have ended and that Slurm still remembers too
// (`-t all`).
std::vector<std::string> squeue_argv(const std::string& format, bool ended_too = false);

// Runs `sbatch --parsable ... SCRIPT` (argv) and returns the job id it printed, with the variables
// overriding_sbatch_variables names left out of sbatch's environment (a warning says so once). Throws RunFailed
// when sbatch fails or prints no id.
std::string submit_job(const std::vector<std::string>& argv);

// What Slurm says against a job script, on one line: `sbatch --test-only` on it (from a temporary file in /tmp,
// removed), so a request Slurm refuses for good (a partition, account, QOS or gres that does not exist, a time or
// node count beyond any partition's) is found before anything is written or queued. Empty when Slurm would take it,
// and when the refusal may pass (the controller out of reach, a limit the user's running jobs reach now): sbatch
// itself then says what it says. RunFailed when the file cannot be written. `options` go before the script, as the
// submission gives them (a job array's --array=LIST, which Slurm's MaxArraySize bounds).
std::string sbatch_refuses(const std::string& script, const std::vector<std::string>& options = {});

// The MPI plugin types and versions `srun --mpi=list` prints here ("pmix", "pmi2", "pmix_v4", ...); empty when it
// cannot say (no srun on PATH, no Slurm configuration on this host, or output of another shape). A job's
// `srun --mpi=NAME` with a NAME not among them fails on every run ("Cannot create context for mpi/NAME").
std::vector<std::string> srun_mpi_plugins();
// parse_srun_mpi_list: the names in that output (unit-tested on Slurm 22.05's form).
std::vector<std::string> parse_srun_mpi_list(const std::string& printed);
// Why `srun --mpi=mpi` would fail, given srun_mpi_plugins(): "" when it is listed or the list is unknown (empty).
std::string srun_lacks_mpi(const std::vector<std::string>& plugins, const std::string& mpi);

}  // namespace dtbench::slurm
