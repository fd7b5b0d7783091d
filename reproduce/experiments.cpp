#include "reproduce/experiments.hpp"

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/published_dir.hpp"
#include "core/regular_file.hpp"
#include "core/json.hpp"
#include "reducers/sweep_document.hpp"
#include "slurm/process.hpp"
#include "slurm/shell.hpp"
#include "slurm/sweep.hpp"

namespace fs = std::filesystem;

namespace dtbench::reproduce {
namespace {

// A finished allreduce sweep file: it reads as the report reads it, for its rank count, with rows. A half-written,
// failed or damaged one is redone (a damaged one was counted finished, and every report after refused it).
bool allreduce_done(const fs::path& file, int ranks) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec))) return false;
  try {
    return !read_allreduce_file(file, ranks)["rows"].empty();
  } catch (const Error&) {
    return false;
  }
}

// The allreduce measurements run here, with mpirun, in every mode: they measure the machine the report is made on
// (claim f's fitted profile) or count bytes, exact on any machine (claim g). Under --submit that is the submitting
// host, said before the first one (a review found --submit read as "everything through Slurm").
bool run_allreduce(const Experiment& e, const fs::path& out, const RunOptions& o, std::ostream& log) {
  bool ok = true;
  const fs::path dir = out / e.name;
  bool said = false;
  for (int k : e.ranks) {
    const fs::path file = allreduce_file(out, e, k);
    if (allreduce_done(file, k)) continue;
    if (o.mode == RunMode::submit && !said) {
      log << "  " << e.name << ": dtbench allreduce runs on this machine with mpirun, not through Slurm (it measures "
          << "the machine the report is made on); on a cluster, run reproduce inside an allocation (salloc)\n";
      said = true;
    }
    std::vector<std::string> argv;
    if (e.transport == "mpi") argv = {"mpirun", "-np", std::to_string(k), "--oversubscribe"};
    argv.push_back(slurm::dtbench_binary());
    argv.push_back("allreduce");
    argv.insert(argv.end(), e.args.begin(), e.args.end());
    if (e.transport == "thread") argv.insert(argv.end(), {"--transport", "thread", "--ranks", std::to_string(k)});
    argv.insert(argv.end(), {"--json", file.string()});
    if (o.mode == RunMode::dry_run) {
      log << "  would run: " << slurm::display_line(argv) << "\n";
      continue;
    }
    fs::create_directories(dir);
    const fs::path stem = dir / ("allreduce-k" + std::to_string(k));
    int rc = slurm::run_to_files(argv, stem.string() + ".out", stem.string() + ".err");
    if (rc != 0 || !allreduce_done(file, k)) {
      log << "  " << e.name << " K=" << k << ": exit " << rc << " (see " << stem.string() << ".err)\n";
      ok = false;
    }
  }
  return ok;
}

}  // namespace

fs::path allreduce_file(const fs::path& out, const Experiment& e, int ranks) {
  return out / e.name / ("allreduce-k" + std::to_string(ranks) + ".json");
}

Json read_allreduce_file(const fs::path& file, int ranks) {
  Json doc = read_json_file(file.string(), "allreduce sweep");
  try {
    check_sweep_document(doc);
  } catch (const BadInput& e) {
    throw BadInput(file.string() + ": " + e.what());
  }
  if (doc["ranks"] != ranks)
    throw BadInput(file.string() + ": /ranks: " + doc["ranks"].dump() + ", but this is the experiment's file for " +
                   std::to_string(ranks) + " ranks");
  return doc;
}

void check_published_copies(const Experiment& e, const fs::path& out) {
  if (e.kind != "published") return;
  for (const auto& file : e.files) {
    const fs::path copy = out / e.name / file;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(copy, ec))) continue;  // copied by this run
    try {
      read_json_file(copy.string(), "published copy");
    } catch (const BadInput& err) {
      throw BadInput(std::string(err.what()) + " (the copy the claim is judged on; restore it from " +
                     (published_dir() / file).string() + " or remove it to copy it again)");
    }
  }
}

bool run_experiment(const Experiment& e, const fs::path& out, const RunOptions& o, std::ostream& log) {
  if (e.kind == "allreduce") return run_allreduce(e, out, o, log);
  if (e.kind == "published") {  // copied once: the claim is judged on the figures of its first run
    for (const auto& file : e.files) {
      const fs::path to = out / e.name / file;
      if (std::error_code ec; fs::exists(fs::symlink_status(to, ec))) continue;  // a dangling link is there too
      if (o.mode == RunMode::dry_run) {
        log << "  would copy " << (published_dir() / file).string() << " to " << to.string() << "\n";
      } else {
        fs::create_directories(to.parent_path());
        write_file_atomic(to, read_regular_file(published_dir() / file, size_t{64} << 20, "published file"), true);
      }
    }
    return true;
  }
  SweepOptions s;
  s.spec = e.spec.string();
  s.out = (out / e.name).string();
  s.dry_run = o.mode == RunMode::dry_run;
  const RunMode as = s.dry_run ? o.checked_as : o.mode;
  s.local = as == RunMode::local;
  s.jobs = s.local ? o.jobs : 1;
  s.submit = as == RunMode::submit;
  s.wait = o.wait;
  s.check_as_run = s.dry_run && as != RunMode::dry_run;
  try {
    run_sweep(s, log);
  } catch (const RunFailed& err) {
    log << "  " << e.name << ": " << err.what() << "\n";
    return false;
  }
  return true;
}

}  // namespace dtbench::reproduce
