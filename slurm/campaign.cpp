#include "slurm/campaign.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/regular_file.hpp"
#include "core/json_fields.hpp"
#include "core/run_record.hpp"
#include "core/saved_weights.hpp"
#include "slurm/process.hpp"
#include "slurm/shell.hpp"

namespace dtbench::slurm {
namespace fs = std::filesystem;
namespace {

std::string rel_to(const fs::path& p, const fs::path& base) { return p.lexically_relative(base).string(); }

}  // namespace

std::string to_string(RunState s) {
  switch (s) {
    case RunState::missing: return "missing";
    case RunState::done: return "done";
    case RunState::preempted: return "preempted";
    case RunState::failed: return "failed";
    case RunState::queued: return "queued";
  }
  return "missing";
}

RunState record_state(const fs::path& record, const Json& expected, std::string& detail, int64_t expected_ranks,
                      bool polling, bool weights_checked) {
  detail.clear();
  // A link to nothing or a loop of links is no record, nor a missing one: the trainer would refuse to write there
  // (found by a hunt: the run was started, and failed); nor is one that cannot be examined.
  if (polling) {
    if (std::error_code ec; !fs::exists(record, ec)) return RunState::missing;
  } else if (!input_exists(record, "run record")) {
    return RunState::missing;
  }
  RecordFile file = read_run_record(record);
  if (!file.record) throw BadInput(file.problem);
  const RunRecord& r = *file.record;
  if (const std::string where = config_difference(r.config, expected); !where.empty())
    throw BadInput(record.string() + ": made from a different config than this spec gives (first difference at " +
                   where + "); use another --out, or move the old record away");
  // The rank count is the spec's too (/slurm nodes x tasks_per_node), not the config's: a record made on another was
  // skipped as done, under an index and scripts of this one.
  if (expected_ranks > 0 && r.ranks != expected_ranks)
    throw BadInput(record.string() + ": made on " + std::to_string(r.ranks) + (r.ranks == 1 ? " rank" : " ranks") +
                   ", where this spec runs it on " +
                   std::to_string(expected_ranks) + " (/slurm nodes x tasks_per_node); use another --out, or move "
                   "the old record away");
  detail = to_string(r.status);
  if (!r.status_detail.empty()) detail += ": " + r.status_detail;
  // A finished run whose weights file (output.save_weights) is gone or not the one it wrote is no finished run: its
  // claim read "inconclusive" at every rerun, which skipped it as done (a hunt). Run again as a failed one is. Read
  // whole, so not while polling (--wait's loop); a sweep's start checks it.
  if (r.done() && !polling && !weights_checked && saved_weights(r)) {
    std::string problem;
    if (read_saved_weights(r, record, problem).empty()) {
      detail += " (" + problem + ": run again)";
      return RunState::failed;
    }
  }
  // Stopped by `train --stop-at` before its config's last step: a part of the run, which the table does not count
  // as done; the sweep skipped it as complete at every rerun (a hunt). Run again as a failed one is (a checkpoint
  // it kept is resumed from).
  if (r.stopped_early()) {
    detail += " (stopped at step " + std::to_string(r.steps) + " of " + r.extra["total_steps"].dump() +
              " by train --stop-at: a part of the run; run again)";
    return RunState::failed;
  }
  if (r.done()) return RunState::done;
  // A synchronous run writes its checkpoint before its `preempted` record: without the checkpoint, `train --resume`
  // refuses the pair as damaged (exit 2), so the sweep's "restarting from the start" failed at every rerun
  // (found by a hunt). Such a run is run again as a failed one is, its record moved to runs/failed/. An asynchronous
  // run keeps no checkpoint, and `--resume` starts it again itself.
  const Json* parallel = r.config.contains("parallel") ? &r.config["parallel"] : nullptr;
  const bool asynchronous = parallel && parallel->is_object() && parallel->contains("mode") && (*parallel)["mode"] == "async";
  if (r.status == RunStatus::preempted && !asynchronous) {
    std::error_code ec;
    if (!fs::exists(beside_record(record, ".ckpt"), ec)) {
      detail += " (its checkpoint is gone: run again from the start)";
      return RunState::failed;
    }
  }
  return r.status == RunStatus::preempted ? RunState::preempted : RunState::failed;
}

CampaignIndex campaign_index(const Spec& spec, const std::vector<Point>& points, const Layout& l, bool arrays) {
  CampaignIndex idx;
  idx.name = spec.name;
  idx.description = spec.description;
  idx.written_utc = utc_timestamp();
  idx.generated_by = l.generated_by;
  for (const auto& a : spec.axes) idx.axes.push_back({a.pointer, a.keys});
  idx.repeats = spec.repeats;
  idx.program = l.program;
  // Where each run's script is, with its task index for job arrays. A group holds the runs of every point with its
  // Slurm section, in point order, so its tasks interleave with other groups' where a slurm.* axis is not the
  // outermost one: looked up by run, not by position.
  std::map<const Run*, std::pair<std::string, int64_t>> where;
  if (arrays) {
    auto groups = array_groups(points);
    for (size_t g = 0; g < groups.size(); ++g)
      for (size_t i = 0; i < groups[g].runs.size(); ++i)
        where[groups[g].runs[i]] = {rel_to(array_script_path(l, g), l.out), static_cast<int64_t>(i)};
  }
  for (const auto& p : points) {
    CampaignIndex::Point ip{p.id, p.label, p.values, p.ranks, p.slurm, {}};
    for (const auto& r : p.runs) {
      CampaignIndex::Run ir{r.name, r.seed, rel_to(config_path(l, r), l.out), rel_to(record_path(l, r), l.out), "", -1};
      if (arrays) std::tie(ir.script, ir.array_task) = where.at(&r);
      else ir.script = rel_to(script_path(l, r), l.out);
      ip.runs.push_back(std::move(ir));
    }
    idx.points.push_back(std::move(ip));
  }
  return idx;
}

void write_script(const fs::path& path, const std::string& text) {
  write_file_atomic(path, text, false);
  ::chmod(path.c_str(), 0755);
}

std::vector<fs::path> campaign_files(const std::vector<Point>& points, const Layout& l, bool arrays) {
  std::vector<fs::path> files = {l.out / "spec.json", l.out / "campaign.json"};
  for (const auto& p : points)
    for (const auto& r : p.runs) {
      files.push_back(config_path(l, r));
      if (!arrays) files.push_back(script_path(l, r));
    }
  if (arrays)
    for (size_t g = 0, n = array_groups(points).size(); g < n; ++g) files.push_back(array_script_path(l, g));
  return files;
}

void check_campaign_paths(const std::vector<Point>& points, const Layout& l, bool arrays, const std::string& option,
                          bool writable) {
  for (const auto& dir : {l.configs, l.scripts, l.runs}) check_output_folder(dir, option, writable);
  std::vector<fs::path> files = campaign_files(points, l, arrays);
  files.push_back(l.out / "jobs.json");  // --submit appends to it
  for (const fs::path& f : files) {
    input_exists(f, "campaign's file");  // a link to nothing, a loop of links: the write would fail late (a hunt)
    std::error_code ec;
    const fs::file_status st = fs::status(f, ec);  // a link to a file is written through, as before
    if (fs::exists(st) && !fs::is_regular_file(st))
      throw BadInput(option + ": " + f.string() + " exists and is not a regular file (the sweep writes it there)");
  }
}

void write_campaign(const Spec& spec, const std::vector<Point>& points, const Layout& l, bool arrays) {
  for (const auto& dir : {l.out, l.configs, l.scripts, l.runs}) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw BadInput(dir.string() + ": cannot create folder: " + ec.message());
  }
  write_json_atomic(l.out / "spec.json", spec.source, false);
  for (const auto& p : points)
    for (const auto& r : p.runs) write_json_atomic(config_path(l, r), r.config, false);
  if (arrays) {
    auto groups = array_groups(points);
    for (size_t g = 0; g < groups.size(); ++g) write_script(array_script_path(l, g), array_script(spec, groups[g], g, l));
  } else {
    for (const auto& p : points)
      for (const auto& r : p.runs) write_script(script_path(l, r), run_script(spec, p, r, l));
  }
  write_json_atomic(l.out / "campaign.json", campaign_index(spec, points, l, arrays).to_json(), false);
}

fs::path move_failed_record(const Layout& l, const Run& r) {
  fs::path dir = l.runs / "failed";
  fs::create_directories(dir);
  std::string stamp = utc_timestamp();
  for (char& c : stamp)
    if (c == ':') c = '-';
  fs::path to = dir / (r.name + "." + stamp + ".json");
  for (int n = 1; fs::exists(to); ++n) to = dir / (r.name + "." + stamp + "." + std::to_string(n) + ".json");
  fs::rename(record_path(l, r), to);
  return to;
}

namespace {

// A campaign's job list as dtbench writes it ({"kind", "submissions": [{run, job_id, array_task?, script,
// submitted_utc}]}), with `subs` its entries. BadInput naming the file and the pointer for anything else: it is part
// of the campaign folder the command was given.
Json read_job_list(const fs::path& jobs_json, std::vector<Submission>* subs) {
  Json j = read_json_file(jobs_json.string(), "job list");
  try {
    const JsonFields list(j, "");
    for (const JsonFields& s : list.items("submissions")) {
      Submission one{s.string("run"), s.string("job_id"), s.has("array_task") ? s.integer("array_task", 0, int64_t{1} << 31) : -1};
      if (subs) subs->push_back(std::move(one));
    }
  } catch (const BadInput& e) {
    throw BadInput(jobs_json.string() + ": " + e.what());
  }
  return j;
}

}  // namespace

std::vector<Submission> read_submissions(const fs::path& jobs_json) {
  std::vector<Submission> subs;
  if (input_exists(jobs_json, "job list")) read_job_list(jobs_json, &subs);
  return subs;
}

void append_submissions(const fs::path& jobs_json, const std::vector<Submission>& subs, const std::string& script) {
  Json j = input_exists(jobs_json, "job list") ? read_job_list(jobs_json, nullptr) : Json{{"kind", "dtbench-sweep-jobs"}, {"submissions", Json::array()}};
  std::string now = utc_timestamp();
  for (const auto& s : subs) {
    Json e = {{"run", s.run}, {"job_id", s.job_id}};
    if (s.array_task >= 0) e["array_task"] = s.array_task;
    e["script"] = script;
    e["submitted_utc"] = now;
    j["submissions"].push_back(e);
  }
  write_json_atomic(jobs_json, j, false);
}

std::vector<ActiveJob> parse_squeue(const std::string& text) {
  std::vector<ActiveJob> jobs;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    std::string part;
    while (std::getline(ls, part, '|')) f.push_back(part);
    if (f.size() != 4 && f.size() != 5) continue;
    ActiveJob a{f[0], f[1], {}, f[3], f.size() == 5 ? f[4] : ""};
    std::string k = f[2];
    if (k != "N/A" && !k.empty()) {
      k = k.substr(0, k.find('%'));  // "0-5%2": the throttle is not a task
      if (!k.empty() && k.front() == '[') k = k.substr(1);
      if (!k.empty() && k.back() == ']') k.pop_back();
      std::stringstream ks(k);
      std::string range;
      while (std::getline(ks, range, ',')) {
        auto dash = range.find('-');
        try {
          int64_t lo = std::stoll(range.substr(0, dash));
          int64_t hi = dash == std::string::npos ? lo : std::stoll(range.substr(dash + 1));
          for (int64_t t = lo; t <= hi && t - lo < 1000000; ++t) a.tasks.push_back(t);
        } catch (const std::exception&) {
        }
      }
    }
    jobs.push_back(std::move(a));
  }
  return jobs;
}

int64_t steps_by_latest_job(const fs::path& record, const Submission& s) {
  try {
    const Json r = read_json_file(record.string(), "run record");
    const Json& slurm = r.at("provenance").at("slurm");
    const auto id = [&](const char* key) { return slurm.contains(key) ? slurm[key].get<std::string>() : std::string(); };
    const bool ours = s.array_task < 0 ? id("job_id") == s.job_id
                                       : id("array_job_id") == s.job_id && id("array_task_id") == std::to_string(s.array_task);
    return ours ? r.at("steps").get<int64_t>() : -1;
  } catch (const std::exception&) {  // no provenance.slurm (not run by Slurm), a record being replaced
    return -1;
  }
}

std::string shown_state(const ActiveJob& a) {
  static const char* const kOrdinary[] = {"", "None", "Priority", "Resources", "BeginTime", "Dependency",
                                          "JobArrayTaskLimit"};
  for (const char* r : kOrdinary)
    if (a.reason == r) return a.state;
  return a.state + " (" + a.reason + ")";
}

std::string job_label(const Submission& s) {
  return s.array_task < 0 ? s.job_id : s.job_id + "_" + std::to_string(s.array_task);
}

const ActiveJob* find_job(const Submission& s, const std::vector<ActiveJob>& active) {
  for (const auto& a : active) {
    if (s.array_task < 0) {
      if (a.job_id == s.job_id || (a.array_id == s.job_id && a.tasks.empty())) return &a;
    } else if (a.array_id == s.job_id) {
      for (int64_t t : a.tasks)
        if (t == s.array_task) return &a;
    }
  }
  return nullptr;
}

std::map<std::string, Submission> latest_submissions(const fs::path& jobs_json) {
  std::map<std::string, Submission> latest;
  for (const auto& s : read_submissions(jobs_json)) latest[s.run] = s;
  return latest;
}

std::vector<std::string> squeue_argv(const std::string& format, bool ended_too) {
  // squeue's filters from the user's environment would hide jobs of the campaign (a pending one looked finished);
  // SLURM_BITSTR_LEN=0: whole array task lists (past 64 bytes squeue cut them with "...").
  std::vector<std::string> argv = {"env"};
  for (const char* v : {"SQUEUE_STATES", "SQUEUE_PARTITION", "SQUEUE_USERS", "SQUEUE_ACCOUNT", "SQUEUE_QOS",
                        "SQUEUE_NAMES", "SQUEUE_LICENSES", "SQUEUE_FORMAT", "SQUEUE_FORMAT2", "SQUEUE_SORT",
                        "SQUEUE_LOCAL", "SQUEUE_SIBLING", "SQUEUE_FEDERATION", "SQUEUE_ARRAY", "SQUEUE_PRIORITY"})
    if (std::getenv(v) != nullptr) argv.insert(argv.end(), {"-u", v});
  argv.insert(argv.end(), {"SLURM_BITSTR_LEN=0", "squeue", "-h", "--all", "-o", format});
  if (ended_too) argv.insert(argv.end(), {"-t", "all"});
  // sbatch reads SBATCH_CLUSTERS, squeue SLURM_CLUSTERS only (which sbatch reads too): the clusters jobs went to.
  const char* sbatch_clusters = std::getenv("SBATCH_CLUSTERS");
  if (sbatch_clusters && *sbatch_clusters && !std::getenv("SLURM_CLUSTERS"))
    argv.push_back(std::string("--clusters=") + sbatch_clusters);
  return argv;
}

bool is_final_state(const std::string& state) {
  static const char* const kFinal[] = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "PREEMPTED",
                                       "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REVOKED"};
  for (const char* f : kFinal)
    if (state == f) return true;
  return false;
}

std::vector<ActiveJob> query_queue(double patience_s, std::ostream* log, std::vector<ActiveJob>* ended) {
  std::vector<ActiveJob> jobs = parse_squeue(squeue_output("%A|%F|%K|%T|%r", patience_s, log, ended != nullptr));
  if (!ended) return jobs;
  ended->clear();
  std::vector<ActiveJob> active;
  for (ActiveJob& j : jobs) (is_final_state(j.state) ? *ended : active).push_back(std::move(j));
  return active;
}

std::string squeue_output(const std::string& format, double patience_s, std::ostream* log, bool ended_too) {
  const std::vector<std::string> argv = squeue_argv(format, ended_too);
  const auto started = std::chrono::steady_clock::now();
  int calls = 0;
  for (double pause = 1;; pause = std::min(pause * 2, 30.0)) {
    ++calls;
    // One call's limit: squeue answers in a second and gives up on an unreachable controller after its
    // MessageTimeout (10 s by default), but hangs on a stopped one; so at most a minute, or the patience left (which
    // a wait's --timeout bounds) when that is longer than half a minute.
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    ProcessResult r = run_capture(argv, false, std::clamp(patience_s - waited, kSqueueCallSeconds / 2, kSqueueCallSeconds));
    if (r.exit_code == 0) return r.out;
    if (r.exit_code == 127) throw RunFailed("squeue is not on PATH (is this a Slurm login node?)");  // env's "not found"
    waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (waited + pause > patience_s)
      throw RunFailed("squeue failed (exit " + std::to_string(r.exit_code) + "): " + one_line(r.err + r.out) +
                      (patience_s > 0 ? " (" + std::to_string(calls) + (calls == 1 ? " call" : " calls") + " in " +
                                            std::to_string(static_cast<long>(waited)) + " s)"
                                      : ""));
    if (log)
      *log << "\n  squeue failed (exit " << r.exit_code << "): " << one_line(r.err + r.out) << "; asking again in "
           << pause << " s" << std::endl;
    std::this_thread::sleep_for(std::chrono::duration<double>(pause));
  }
}

std::string sbatch_job_id(const std::string& printed) {
  std::istringstream in(printed);
  std::string line, id;
  const auto digits = [](const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; };
  while (std::getline(in, line)) {
    const size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos) continue;
    line = line.substr(b, e - b + 1);
    static const std::string said = "Submitted batch job ";
    if (line.rfind(said, 0) == 0) line = line.substr(said.size(), line.find(' ', said.size()) - said.size());
    const std::string head = line.substr(0, line.find(';'));
    if (digits(head)) id = head;
  }
  return id;
}

std::vector<std::string> parse_srun_mpi_list(const std::string& printed) {
  // Slurm 22.05: "MPI plugin types are...", one tab-indented name a line, then "specific pmix plugin versions
  // available: pmix_v4" (a comma-separated list where there are several).
  std::vector<std::string> names;
  std::istringstream in(printed);
  std::string line;
  bool listing = false;
  static const std::string versions = "specific pmix plugin versions available:";
  while (std::getline(in, line)) {
    if (line.rfind("MPI plugin types are", 0) == 0) {
      listing = true;
    } else if (listing && !line.empty() && (line[0] == '\t' || line[0] == ' ')) {
      const size_t b = line.find_first_not_of(" \t"), e = line.find_last_not_of(" \t\r");
      if (b != std::string::npos) names.push_back(line.substr(b, e - b + 1));
    } else if (line.rfind(versions, 0) == 0) {
      std::istringstream list(line.substr(versions.size()));
      std::string v;
      while (std::getline(list, v, ',')) {
        const size_t b = v.find_first_not_of(" \t"), e = v.find_last_not_of(" \t\r");
        if (b != std::string::npos) names.push_back(v.substr(b, e - b + 1));
      }
    } else {
      listing = false;
    }
  }
  return names;
}

std::vector<std::string> srun_mpi_plugins() {
  if (!on_path("srun")) return {};
  const ProcessResult r = run_capture({"srun", "--mpi=list"}, false, 30);
  if (r.exit_code == kTimedOut)
    std::cerr << "dtbench: warning: `srun --mpi=list` gave no answer in 30 s; /slurm/mpi is not checked against "
                 "srun's MPI plugins" << std::endl;
  return r.exit_code == 0 ? parse_srun_mpi_list(r.out + r.err) : std::vector<std::string>{};
}

std::string srun_lacks_mpi(const std::vector<std::string>& plugins, const std::string& mpi) {
  if (plugins.empty() || std::find(plugins.begin(), plugins.end(), mpi) != plugins.end()) return "";
  std::string listed;
  for (const std::string& p : plugins) listed += (listed.empty() ? "" : ", ") + p;
  return "srun here has no MPI plugin \"" + mpi + "\", and every run would fail at its launch (`srun --mpi=list`: " +
         listed + "); set /slurm/mpi to one of them, or /slurm/launcher to \"mpirun\"";
}

// Whether some node cannot take jobs now (drained, down, in maintenance, not responding): sbatch --test-only then says
// "Requested node configuration is not available" of a request that sbatch itself queues until the nodes are back,
// and a campaign could not be submitted at all during a maintenance (found by a hunt). Not asked (false) when sinfo
// fails or does not answer within 30 s.
static bool some_node_unavailable() {
  const ProcessResult r = run_capture({"sinfo", "--noheader", "--format=%T"}, false, 30);
  if (r.exit_code != 0) return false;
  std::istringstream in(r.out);
  for (std::string state; in >> state;)
    if (state != "idle" && state != "allocated" && state != "mixed" && state != "completing") return true;
  return false;
}

std::string sbatch_refuses(const std::string& script, const std::vector<std::string>& options) {
  char path[] = "/tmp/dtbench-test-only-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0)
    throw RunFailed(std::string("cannot create a temporary file in /tmp for sbatch --test-only: ") + std::strerror(errno));
  const bool written = ::write(fd, script.data(), script.size()) == static_cast<ssize_t>(script.size());
  ::close(fd);
  ProcessResult r;
  try {
    // The request as it will be submitted: without the variables that would override the script (submit_job).
    std::vector<std::string> argv = sbatch_environment(script);
    argv.insert(argv.end(), {"sbatch", "--test-only"});
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(path);
    if (written) r = run_capture(argv);
  } catch (...) {
    ::unlink(path);
    throw;
  }
  ::unlink(path);
  if (!written) throw RunFailed(std::string("cannot write the temporary file ") + path + " for sbatch --test-only");
  if (r.exit_code == 0) return "";
  std::string said = one_line(r.err + r.out), lower = said;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // A refusal for good: sbatch would refuse the job too. "fatal:" is sbatch's own check of its options (two that
  // exclude each other: a campaign was half submitted when the second point's sbatch failed; a hunt), but not one
  // that could not reach the controller. "not available" is for good only while every node is up (above).
  const auto has = [&](const char* text) { return lower.find(text) != std::string::npos; };
  const bool for_good = has("invalid") || has("more processors requested than permitted") ||
                        (has("fatal:") && !has("unable to contact")) ||
                        (has("not available") && !some_node_unavailable());
  if (!for_good) return "";
  // The request also holds what the environment adds where the script has no line (SBATCH_PARTITION where the spec
  // names none): said, since the refusal would otherwise be blamed on the spec alone (found by a hunt).
  const std::vector<std::string> unset = overriding_sbatch_variables(script);
  std::string from_env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var(*e);
    const std::string name = var.substr(0, var.find('='));
    if (name.rfind("SBATCH_", 0) == 0 && std::find(unset.begin(), unset.end(), name) == unset.end())
      from_env += (from_env.empty() ? "" : ", ") + var;
  }
  return from_env.empty() ? said : said + " (sbatch also read from the environment: " + from_env + ")";
}

std::vector<SbatchLineOption> sbatch_line_options(const std::string& words) {
  // Long names a line may abbreviate (getopt_long takes an unambiguous prefix: "--constr=x"), and the letters.
  static const char* const kLong[] = {
      "account", "acctg-freq", "array", "chdir", "cluster-constraint", "clusters", "comment", "constraint",
      "container", "core-spec", "cpus-per-gpu", "cpus-per-task", "delay-boot", "dependency", "distribution", "error",
      "exclude", "exclusive", "export", "get-user-env", "gpu-bind", "gpu-freq", "gpus", "gpus-per-node",
      "gpus-per-socket", "gpus-per-task", "gres", "gres-flags", "hint", "input", "job-name", "licenses", "mem",
      "mem-bind", "mem-per-cpu", "mem-per-gpu", "network", "no-kill", "no-requeue", "nodes", "ntasks",
      "ntasks-per-node", "open-mode", "output", "overcommit", "partition", "power", "profile", "qos", "requeue",
      "reservation", "signal", "spread-job", "switches", "thread-spec", "threads-per-core", "time", "use-min-nodes",
      "wait", "wait-all-nodes", "wckey",
      // and those that change how sbatch behaves rather than the job (owned_sbatch_option refuses some)
      "bb", "begin", "contiguous", "cpu-freq", "extra-node-info", "help", "hold", "immediate", "nodefile", "nodelist",
      "oversubscribe", "parsable", "quiet", "test-only", "usage", "verbose", "version"};
  static const std::pair<char, const char*> kShort[] = {
      {'A', "account"}, {'a', "array"},     {'C', "constraint"}, {'c', "cpus-per-task"}, {'D', "chdir"},
      {'d', "dependency"}, {'e', "error"},  {'G', "gpus"},       {'i', "input"},         {'J', "job-name"},
      {'k', "no-kill"}, {'L', "licenses"},  {'M', "clusters"},   {'m', "distribution"},  {'N', "nodes"},
      {'n', "ntasks"},  {'O', "overcommit"}, {'o', "output"},    {'p', "partition"},     {'q', "qos"},
      {'S', "core-spec"}, {'t', "time"},    {'W', "wait"},       {'w', "nodelist"},      {'x', "exclude"},
      {'H', "hold"},    {'h', "help"},      {'I', "immediate"},  {'Q', "quiet"},         {'s', "oversubscribe"},
      {'u', "usage"},   {'V', "version"},   {'v', "verbose"},    {'B', "extra-node-info"}, {'b', "begin"},
      {'F', "nodefile"}};
  // The letters that take no argument, which a bundle goes on after; any other ends it (the rest is its argument).
  static const std::string kNoArgument = "HhIkOQsuVvW";
  std::vector<SbatchLineOption> options;
  // Long options that take no argument (or only one joined by '='): any other takes the next word when it has none.
  static const std::set<std::string> kNoArgumentLong = {
      "exclusive", "hold", "requeue", "no-requeue", "overcommit", "oversubscribe", "test-only", "usage", "version",
      "help", "verbose", "quiet", "wait", "spread-job", "use-min-nodes", "no-kill", "contiguous", "get-user-env",
      "ignore-pbs", "parsable", "propagate", "reboot", "immediate"};
  // The words as sbatch splits an #SBATCH line: at blanks outside double quotes, which it removes, a backslash
  // keeping the next character (sbatch_quote writes values so): "--comment=\"sweep -N 2\"" is one option (a review).
  std::vector<std::string> list;
  {
    std::string word;
    bool quoted = false, any = false;
    for (size_t i = 0; i < words.size(); ++i) {
      const char c = words[i];
      if (c == '\\' && i + 1 < words.size()) {
        word += words[++i], any = true;
      } else if (c == '"') {
        quoted = !quoted, any = true;
      } else if (!quoted && (c == ' ' || c == '\t')) {
        if (any) list.push_back(word);
        word.clear(), any = false;
      } else {
        word += c, any = true;
      }
    }
    if (any) list.push_back(word);
  }
  for (size_t w = 0; w < list.size(); ++w) {
    const std::string& word = list[w];
    if (word.rfind("--", 0) == 0) {
      const size_t eq = word.find('=');
      const std::string given = word.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      std::string found;
      for (const char* name : kLong) {
        if (given == name) {
          found = name;
          break;
        }
        if (!given.empty() && std::string(name).rfind(given, 0) == 0) found = found.empty() ? name : "?";
      }
      const std::string name = found == "?" || found.empty() ? given : found;
      if (!given.empty()) options.push_back({name, "--" + given});
      // "--comment -t": the word after an option of kLong that takes an argument is that argument (getopt's).
      if (eq == std::string::npos && found != "?" && !found.empty() && !kNoArgumentLong.count(found)) ++w;
      continue;
    }
    if (word.size() < 2 || word[0] != '-') continue;  // an option's argument
    for (size_t i = 1; i < word.size(); ++i) {
      std::string name;
      for (const auto& [letter, long_name] : kShort)
        if (word[i] == letter) name = long_name;
      options.push_back({name.empty() ? std::string(1, word[i]) : name, std::string("-") + word[i]});
      if (kNoArgument.find(word[i]) == std::string::npos) {
        if (i + 1 == word.size() && !name.empty()) ++w;  // "-J -N": the next word is -J's argument
        break;
      }
    }
  }
  return options;
}

std::string sbatch_line_option(const std::string& words) {
  const std::vector<SbatchLineOption> options = sbatch_line_options(words);
  return options.empty() ? "" : options.front().name;
}

std::vector<std::string> overriding_sbatch_variables(const std::string& script) {
  // sbatch(1): "Environment variables will override any options set in a batch script". Each #SBATCH line's option
  // (the script's own and the spec's /slurm/sbatch ones, in any form sbatch takes: "--mem 4G", "-C x", "--constr=x")
  // and the variables that set it: SBATCH_ and its name, but for these. And two that change any job: SBATCH_WAIT
  // (sbatch would block until the job ends) and SBATCH_ARRAY_INX (one run's script submitted as an array).
  static const std::map<std::string, std::vector<const char*>> kSpecial = {
      {"time", {"SBATCH_TIMELIMIT"}},       {"mem", {"SBATCH_MEM_PER_NODE"}},
      {"requeue", {"SBATCH_REQUEUE", "SBATCH_NO_REQUEUE"}},
      {"no-requeue", {"SBATCH_REQUEUE", "SBATCH_NO_REQUEUE"}},
      {"switches", {"SBATCH_REQ_SWITCH", "SBATCH_WAIT4SWITCH"}}, {"hint", {"SBATCH_HINT", "SLURM_HINT"}},
      {"array", {"SBATCH_ARRAY_INX"}},      {"clusters", {"SBATCH_CLUSTERS", "SLURM_CLUSTERS"}},
      // sbatch(1)'s names for these two are not SBATCH_ and the option (a hunt: the variable won over the line).
      {"cpu-freq", {"SBATCH_CPU_FREQ_REQ"}}, {"bb", {"SBATCH_BURST_BUFFER"}}};
  std::vector<std::string> names;
  std::istringstream in(script);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#SBATCH ", 0) != 0) continue;
    const size_t at = line.find_first_not_of(' ', 7);
    if (at == std::string::npos) continue;
    for (const SbatchLineOption& o : sbatch_line_options(line.substr(at))) {  // every option of the line
      const std::string& option = o.name;
      if (const auto s = kSpecial.find(option); s != kSpecial.end()) {
        names.insert(names.end(), s->second.begin(), s->second.end());
      } else {
        std::string var = "SBATCH_";
        for (char c : option) var += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        names.push_back(var);
      }
    }
  }
  names.insert(names.end(), {"SBATCH_WAIT", "SBATCH_ARRAY_INX"});
  std::vector<std::string> set;
  for (const std::string& n : names)
    if (std::getenv(n.c_str()) != nullptr && std::find(set.begin(), set.end(), n) == set.end()) set.push_back(n);
  return set;
}

std::vector<std::string> sbatch_environment(const std::string& script) {
  // The script is the campaign's record of its request, and its runs' configs were resolved for it: a variable of
  // the user's environment that would override one of its lines is left out of sbatch's environment, and said once
  // (SBATCH_NO_REQUEUE stopped the checkpointed requeue; found by a review).
  const std::vector<std::string> unset = overriding_sbatch_variables(script);
  if (unset.empty()) return {};
  static bool said = false;
  if (!said) {
    std::string names;
    for (const std::string& n : unset) names += (names.empty() ? "" : ", ") + n;
    std::cerr << "dtbench: warning: " << names << " would change the job script's request (sbatch takes such variables "
              << "over its #SBATCH lines); left out of sbatch's environment (set the spec's /slurm keys instead)"
              << std::endl;
    said = true;
  }
  std::vector<std::string> prefix = {"env"};
  for (const std::string& n : unset) prefix.insert(prefix.end(), {"-u", n});
  return prefix;
}

std::string submit_job(const std::vector<std::string>& argv) {
  std::vector<std::string> command = argv;
  if (std::ifstream in{argv.back()}) {
    const std::vector<std::string> prefix =
        sbatch_environment(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
    command.insert(command.begin(), prefix.begin(), prefix.end());
  }
  // Its own process group: Ctrl-C at the terminal does not end an sbatch that may have queued the job already (the
  // caller lists it first: sweep's HoldStopSignals).
  ProcessResult r = run_capture(command, /*own_group=*/true);
  if (r.exit_code != 0)
    throw RunFailed(display_line(argv) + " failed (exit " + std::to_string(r.exit_code) + "): " + one_line(r.err + r.out));
  const std::string id = sbatch_job_id(r.out);
  if (id.empty()) throw RunFailed(display_line(argv) + " printed no job id: " + r.out);
  return id;
}

}  // namespace dtbench::slurm
