// sbatch scripts for the runs of a sweep: one script per run, or one job array per group of runs
// that share their Slurm section.
//
// Every script asks for --requeue and --signal=B:USR1@N: N seconds before the time limit Slurm
// sends USR1 to the batch shell, which passes it on to the launcher (srun and mpirun forward USR1 to
// the ranks); the trainer checkpoints at the next step boundary and exits with code 3, and the
// script then requeues its own job, whose next start resumes from the checkpoint (the launch line
// always passes --resume). When Slurm itself preempts or requeues the job, the ranks get SIGTERM
// directly, checkpoint the same way and Slurm requeues the job. A plain scancel also makes the
// ranks checkpoint but is not undone (sweep --wait does not submit a cancelled job again). Output and error files lie beside the record and are opened
// in append mode, so every attempt's log is kept.
//
// Only values that passed shell_quote (bash) or sbatch_quote (#SBATCH lines) reach a script;
// the spec's /slurm/setup lines are shell code by definition and are written as given.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "slurm/expand.hpp"
#include "slurm/spec.hpp"

namespace dtbench::slurm {

// Where a campaign's files go (all absolute) and what to launch.
struct Layout {
  std::filesystem::path out;      // --out
  std::filesystem::path configs;  // out/configs: <run>.json
  std::filesystem::path scripts;  // out/scripts: <run>.sbatch, array-<k>.sbatch
  std::filesystem::path runs;     // out/runs: records, logs, checkpoints
  std::vector<std::string> program;  // program and leading arguments (the config path and --resume follow)
  std::string generated_by;       // "dtbench 0.1.0 (git abc123)" for the header comment
};

// "dtbench 0.1.0 (git abc123)": the Layout's generated_by for this binary.
std::string generated_by();

Layout make_layout(const std::filesystem::path& out, std::vector<std::string> program, std::string generated_by);

std::filesystem::path config_path(const Layout& l, const Run& r);
std::filesystem::path record_path(const Layout& l, const Run& r);
std::filesystem::path script_path(const Layout& l, const Run& r);
std::filesystem::path array_script_path(const Layout& l, size_t group);

// The launch words inside a job: "srun --mpi=pmix [args] PROGRAM... CONFIG --resume [EXTRA...]" or
// "mpirun [args] PROGRAM... CONFIG --resume [EXTRA...]", unquoted (callers quote).
std::vector<std::string> launch_words(const Json& slurm, const Layout& l, const std::string& config,
                                      const std::vector<std::string>& extra = {});

// One job that trains one run: its comment lines, job name, resources (a resolved Slurm section), output and
// error files (appended to, beside the record), config and the arguments after --resume.
struct JobScript {
  std::vector<std::string> comments;  // each written as "# LINE"
  std::string job_name;
  Json slurm;
  std::filesystem::path out, err, config;
  std::vector<std::string> extra_args;
};
std::string job_script(const JobScript& j, const Layout& l);

// The script of one run of a sweep.
std::string run_script(const Spec& spec, const Point& p, const Run& r, const Layout& l);

// One job array over `runs` (all from points with the same Slurm section); task i runs runs[i].
struct ArrayGroup {
  Json slurm;
  std::vector<const Point*> points;  // the point of each task
  std::vector<const Run*> runs;
};
std::vector<ArrayGroup> array_groups(const std::vector<Point>& points);
std::string array_script(const Spec& spec, const ArrayGroup& g, size_t group, const Layout& l);

// The first #SBATCH line of `script` that sbatch would read as the start of a heterogeneous job's next component
// (a line holding "hetjob" or "packjob", which a campaign's name, folder or extra sbatch line may hold): the job
// would be split in two, the later lines asking for the second component. "" when there is none.
std::string heterogeneous_job_line(const std::string& script);

// What bash says of `script`'s syntax (`bash -n`), on one line; "" when it parses (or bash cannot be started). The
// spec's set-up lines are the script's only text not written by dtbench: an unterminated quote or an `if` without its
// `fi` there swallowed the rest of the script, and every job died with bash's "unexpected end of file".
std::string script_syntax_problem(const std::string& script);

}  // namespace dtbench::slurm
