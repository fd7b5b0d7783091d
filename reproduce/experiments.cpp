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

// A finished allreduce sweep file: it parses and has rows. A half-written or failed one is redone.
bool allreduce_done(const fs::path& file) {
  try {
    Json j = read_json_file(file.string(), "allreduce sweep");
    return j.is_object() && j.contains("rows") && j["rows"].is_array() && !j["rows"].empty();
  } catch (const Error&) {
    return false;
  }
}

bool run_allreduce(const Experiment& e, const fs::path& out, const RunOptions& o, std::ostream& log) {
  bool ok = true;
  const fs::path dir = out / e.name;
  for (int k : e.ranks) {
    const fs::path file = allreduce_file(out, e, k);
    if (allreduce_done(file)) continue;
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
    if (rc != 0 || !allreduce_done(file)) {
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

Json read_allreduce_file(const fs::path& file) {
  Json doc = read_json_file(file.string(), "allreduce sweep");
  try {
    check_sweep_document(doc);
  } catch (const BadInput& e) {
    throw BadInput(file.string() + ": " + e.what());
  }
  return doc;
}

bool run_experiment(const Experiment& e, const fs::path& out, const RunOptions& o, std::ostream& log) {
  if (o.mode == RunMode::none) return true;
  if (e.kind == "allreduce") return run_allreduce(e, out, o, log);
  if (e.kind == "published") {  // copied once: the claim is judged on the figures of its first run
    for (const auto& file : e.files) {
      const fs::path to = out / e.name / file;
      if (o.mode == RunMode::dry_run) {
        log << "  would copy " << (published_dir() / file).string() << " to " << to.string() << "\n";
      } else if (std::error_code ec; !fs::exists(fs::symlink_status(to, ec))) {  // a dangling link is there too
        fs::create_directories(to.parent_path());
        write_file_atomic(to, read_regular_file(published_dir() / file, size_t{64} << 20, "published file"), true);
      }
    }
    return true;
  }
  SweepOptions s;
  s.spec = e.spec.string();
  s.out = (out / e.name).string();
  s.local = o.mode == RunMode::local;
  s.jobs = s.local ? o.jobs : 1;
  s.submit = o.mode == RunMode::submit;
  s.wait = o.wait;
  s.dry_run = o.mode == RunMode::dry_run;
  try {
    run_sweep(s, log);
  } catch (const RunFailed& err) {
    log << "  " << e.name << ": " << err.what() << "\n";
    return false;
  }
  return true;
}

}  // namespace dtbench::reproduce
