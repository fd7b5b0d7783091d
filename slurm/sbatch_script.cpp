#include "slurm/sbatch_script.hpp"

#include <sstream>

#include "core/provenance.hpp"
#include "slurm/process.hpp"
#include "slurm/shell.hpp"

namespace dtbench::slurm {
namespace fs = std::filesystem;
namespace {

// The point's values as one JSON object: a comment line can then never be broken by a value
// (dump escapes line breaks).
std::string values_json(const Point& p) {
  Json v = Json::object();
  for (const auto& [k, val] : p.values) v[k] = val;
  return v.dump();
}

void sbatch_resources(std::ostringstream& s, const Json& slurm) {
  s << "#SBATCH --nodes=" << slurm["nodes"].get<int64_t>() << "\n";
  s << "#SBATCH --ntasks-per-node=" << slurm["tasks_per_node"].get<int64_t>() << "\n";
  s << "#SBATCH --cpus-per-task=" << slurm["cpus_per_task"].get<int64_t>() << "\n";
  // GPUs: with --gpus-per-task Slurm binds each task to its own GPUs; with --gpus-per-node or --gres every
  // task sees the node's GPUs and dtbench takes device (local rank mod count), one per task: the local rank
  // from OMPI_COMM_WORLD_LOCAL_RANK (mpirun), else SLURM_LOCALID (srun).
  if (slurm["gpus_per_node"].get<int64_t>() > 0) s << "#SBATCH --gpus-per-node=" << slurm["gpus_per_node"].get<int64_t>() << "\n";
  if (slurm["gpus_per_task"].get<int64_t>() > 0) s << "#SBATCH --gpus-per-task=" << slurm["gpus_per_task"].get<int64_t>() << "\n";
  if (!slurm["gres"].get<std::string>().empty()) s << "#SBATCH --gres=" << slurm["gres"].get<std::string>() << "\n";
  s << "#SBATCH --time=" << sbatch_quote(slurm["time"].get<std::string>(), "/slurm/time") << "\n";
  for (const char* key : {"partition", "account", "qos"}) {
    std::string v = slurm[key].get<std::string>();
    if (!v.empty()) s << "#SBATCH --" << key << "=" << sbatch_quote(v, std::string("/slurm/") + key) << "\n";
  }
  s << "#SBATCH --requeue\n";
  s << "#SBATCH --open-mode=append\n";
  if (slurm["signal_seconds"].get<int64_t>() > 0) s << "#SBATCH --signal=B:USR1@" << slurm["signal_seconds"].get<int64_t>() << "\n";
  for (const auto& line : slurm["sbatch"]) s << "#SBATCH " << line.get<std::string>() << "\n";
}

// Environment set-up, the launch in the background, signal forwarding and self-requeue. `own` names the script's
// variables set before it.
void body(std::ostringstream& s, const Json& slurm, const Layout& l, const std::string& config_expr,
          const std::string& own, const std::vector<std::string>& extra = {}) {
  // set -u after the spec's set-up lines: a conda or module script they source may read unset variables ($PS1)
  // and the job failed there (found by a review). The script's own variables are put back after them: a line or a
  // script it sources may assign any name (`config=...` ran the job on another config; noticed in stop 58).
  if (!slurm["setup"].empty()) {
    s << "# Environment set-up from the spec (/slurm/setup); the script's own variables are kept from it:\n";
    s << "dtbench_own=$(declare -p " << own << ")\n";
    for (const auto& line : slurm["setup"]) s << line.get<std::string>() << "\n";
    // An empty line first: a last set-up line that ends in a backslash continues onto it, not onto the script's own.
    s << "\neval \"$dtbench_own\"\n";
  }
  s << "set -u\n";
  s << "echo \"dtbench-sweep: job ${SLURM_JOB_ID:-none} restart ${SLURM_RESTART_COUNT:-0} on "
       "${SLURM_JOB_NODELIST:-$(hostname)} at $(date -u +%Y-%m-%dT%H:%M:%SZ)\"\n";
  std::vector<std::string> words = launch_words(slurm, l, "@CONFIG@", extra);
  s << "launch=(";
  for (size_t i = 0; i < words.size(); ++i) {
    s << (i ? " " : "");
    if (words[i] == "@CONFIG@") s << config_expr;
    else s << shell_quote(words[i]);
  }
  s << ")\n";
  s << R"SH(# USR1 (sent by Slurm before the time limit, --signal=B:USR1@N) goes on to the launcher, which
# forwards it to the ranks: they checkpoint at the next step boundary and exit with 3; then the job
# requeues itself and resumes. SIGTERM from Slurm (preemption, requeue, scancel) reaches the ranks
# directly.
requeue=0
trap 'requeue=1; kill -USR1 "$launcher" 2>/dev/null' USR1
"${launch[@]}" &
launcher=$!
# wait returns early when a trapped signal arrives: wait again until the launcher has exited.
while :; do
  wait "$launcher"
  rc=$?
  kill -0 "$launcher" 2>/dev/null || break
done
echo "dtbench-sweep: launcher exited with $rc at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
if [ "$rc" -eq 3 ] && [ "$requeue" -eq 1 ]; then
  echo "dtbench-sweep: checkpointed before the time limit; requeueing job $SLURM_JOB_ID"
  scontrol requeue "$SLURM_JOB_ID"
fi
exit "$rc"
)SH";
}

}  // namespace

std::string heterogeneous_job_line(const std::string& script) {
  std::istringstream in(script);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#SBATCH", 0) != 0) continue;
    std::string lower = line;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.find("hetjob") != std::string::npos || lower.find("packjob") != std::string::npos) return line;
  }
  return "";
}

std::string script_syntax_problem(const std::string& script) {
  ProcessResult r;
  try {
    r = run_capture({"bash", "-n", "-c", script}, false, 10);
  } catch (const RunFailed&) {
    return "";  // no bash here to ask: the job's own shell will say
  }
  if (r.exit_code == 0) return "";
  std::string said = r.err.empty() ? "exit " + std::to_string(r.exit_code) : r.err;
  for (char& c : said)
    if (c == '\n') c = ' ';
  while (!said.empty() && said.back() == ' ') said.pop_back();
  return said.substr(0, 300);
}

std::string generated_by() {
  Json p = provenance();
  return "dtbench " + p["dtbench"].value("version", "?") + " (git " + p["dtbench"].value("git_sha", "?") + ")";
}

Layout make_layout(const fs::path& out, std::vector<std::string> program, std::string generated_by) {
  Layout l;
  l.out = out;
  l.configs = out / "configs";
  l.scripts = out / "scripts";
  l.runs = out / "runs";
  l.program = std::move(program);
  l.generated_by = std::move(generated_by);
  return l;
}

fs::path config_path(const Layout& l, const Run& r) { return l.configs / (r.name + ".json"); }
fs::path record_path(const Layout& l, const Run& r) { return l.runs / (r.name + ".json"); }
fs::path script_path(const Layout& l, const Run& r) { return l.scripts / (r.name + ".sbatch"); }
fs::path array_script_path(const Layout& l, size_t group) {
  return l.scripts / ("array-" + std::to_string(group) + ".sbatch");
}

std::vector<std::string> launch_words(const Json& slurm, const Layout& l, const std::string& config,
                                      const std::vector<std::string>& extra) {
  std::vector<std::string> w;
  if (slurm["launcher"] == "srun") {
    // --kill-on-bad-exit: a rank that dies ends the whole step instead of leaving the others waiting
    // in a collective until the time limit. Safe for preemption: dtbench train's ranks leave together
    // (a final barrier) after rank 0 has written the record, so exit code 3 kills nothing half-done.
    w = {"srun", "--mpi=" + slurm["mpi"].get<std::string>(), "--kill-on-bad-exit=1"};
  } else {
    w = {"mpirun"};
  }
  // A rank's CPUs: srun takes --cpus-per-task from the job no more (Slurm 22.05), and Open MPI's mpirun binds
  // each rank to one core (2 ranks or fewer) or socket; either way `threads: 0` found one CPU (found by a review).
  // Given before launcher_args, whose own options come later and win (srun), or are left alone (mpirun).
  const int64_t cpus = slurm["cpus_per_task"].get<int64_t>();
  if (cpus > 1) {
    std::vector<std::string> args;
    for (const auto& a : slurm["launcher_args"]) args.push_back(a.get<std::string>());
    if (slurm["launcher"] == "srun") w.push_back("--cpus-per-task=" + std::to_string(cpus));
    else if (!places_ranks(args, /*environment=*/false)) w.insert(w.end(), {"--bind-to", "none"});
  }
  for (const auto& a : slurm["launcher_args"]) w.push_back(a.get<std::string>());
  for (const auto& a : l.program) w.push_back(a);
  w.push_back(config);
  w.push_back("--resume");
  w.insert(w.end(), extra.begin(), extra.end());
  return w;
}

std::string job_script(const JobScript& j, const Layout& l) {
  std::ostringstream s;
  s << "#!/bin/bash\n";
  for (const std::string& c : j.comments) s << "# " << c << "\n";
  s << "#SBATCH --job-name=" << sbatch_quote(j.job_name, "/name") << "\n";
  sbatch_resources(s, j.slurm);
  s << "#SBATCH --output=" << sbatch_quote_path(j.out.string()) << "\n";
  s << "#SBATCH --error=" << sbatch_quote_path(j.err.string()) << "\n";
  s << "config=" << shell_quote(j.config.string()) << "\n";
  body(s, j.slurm, l, "\"$config\"", "config", j.extra_args);
  return s.str();
}

std::string run_script(const Spec& spec, const Point& p, const Run& r, const Layout& l) {
  JobScript j;
  j.comments = {"dtbench sweep, campaign " + Json(spec.name).dump() + ": run " + r.name + " (seed " +
                    std::to_string(r.seed) + ")",
                "point " + p.id + ": " + values_json(p),
                "Written by " + l.generated_by + ". Submit again with: sbatch " + shell_quote(script_path(l, r).string())};
  j.job_name = spec.name + "/" + r.name;
  j.slurm = p.slurm;
  const fs::path rec = record_path(l, r);
  j.out = rec.parent_path() / (r.name + ".out");
  j.err = rec.parent_path() / (r.name + ".err");
  j.config = config_path(l, r);
  return job_script(j, l);
}

std::vector<ArrayGroup> array_groups(const std::vector<Point>& points) {
  std::vector<ArrayGroup> groups;
  for (const auto& p : points) {
    ArrayGroup* g = nullptr;
    for (auto& candidate : groups)
      if (candidate.slurm == p.slurm) g = &candidate;
    if (!g) {
      groups.push_back({p.slurm, {}, {}});
      g = &groups.back();
    }
    for (const auto& r : p.runs) {
      g->points.push_back(&p);
      g->runs.push_back(&r);
    }
  }
  return groups;
}

std::string array_script(const Spec& spec, const ArrayGroup& g, size_t group, const Layout& l) {
  std::ostringstream s;
  s << "#!/bin/bash\n";
  s << "# dtbench sweep, campaign " << Json(spec.name).dump() << ": job array " << group << " of " << g.runs.size()
    << " runs sharing one Slurm section; task i runs runs[i] below\n";
  s << "# Written by " << l.generated_by << ". Submit again with: sbatch " << shell_quote(array_script_path(l, group).string())
    << " (or --array=LIST for some tasks)\n";
  s << "#SBATCH --job-name=" << sbatch_quote(spec.name + "/array-" + std::to_string(group), "/name") << "\n";
  s << "#SBATCH --array=0-" << g.runs.size() - 1 << "\n";
  sbatch_resources(s, g.slurm);
  // Slurm's own log holds only what happens before the task's output is redirected beside its record.
  const std::string base = l.runs.string() + "/array-" + std::to_string(group);
  if (base.find('\\') == std::string::npos) {
    const std::string prelude = sbatch_quote_path(base + "-");
    s << "#SBATCH --output=" << prelude << "%A_%a.out\n";
    s << "#SBATCH --error=" << prelude << "%A_%a.err\n";
  } else {
    // A backslash anywhere in the name turns Slurm's % patterns off (sbatch(1), "filename pattern"): the tasks share
    // one file for what they print before the redirect below, rather than one literally named %A_%a.
    s << "#SBATCH --output=" << sbatch_quote_path(base + ".out") << "\n";
    s << "#SBATCH --error=" << sbatch_quote_path(base + ".err") << "\n";
  }
  s << "runs=(\n";
  for (size_t i = 0; i < g.runs.size(); ++i)
    s << "  " << shell_quote(g.runs[i]->name) << "  # " << i << ": point " << g.points[i]->id << " "
      << values_json(*g.points[i]) << "\n";
  s << ")\n";
  s << "run=${runs[$SLURM_ARRAY_TASK_ID]}\n";
  s << "runs_dir=" << shell_quote(l.runs.string()) << "\n";
  s << "exec >>\"$runs_dir/$run.out\" 2>>\"$runs_dir/$run.err\"\n";
  s << "config=" << shell_quote(l.configs.string()) << "/\"$run.json\"\n";
  body(s, g.slurm, l, "\"$config\"", "runs run runs_dir config");
  return s.str();
}

}  // namespace dtbench::slurm
