#include "pbt/pbt_command.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/run_record.hpp"
#include "core/timer.hpp"
#include "core/pbt_lineage.hpp"
#include "pbt/population.hpp"
#include "pbt/spec.hpp"
#include "slurm/process.hpp"

namespace dtbench {
namespace fs = std::filesystem;
using pbt::Lineage;

namespace {

struct Args {
  std::string spec;
  std::string out;
  bool dry_run = false;
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

std::string tail_of(const fs::path& file, size_t bytes) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (s.size() > bytes) s = "..." + s.substr(s.size() - bytes);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// An exclusive lock on a campaign folder for the life of the process (flock: released if the process dies).
class DirLock {
 public:
  explicit DirLock(const fs::path& file) : fd_(::open(file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw RunFailed(file.string() + ": cannot create the campaign's lock file");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      throw RunFailed(file.parent_path().string() + ": another dtbench pbt is running on this folder");
    }
  }
  ~DirLock() { ::close(fd_); }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_;
};

// A short folder (Unix socket paths are limited to about 100 bytes) per campaign and member slot.
std::string session_base(const fs::path& dir, int member) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "/tmp/dtbench-pbt-%012llx-m%02d",
                static_cast<unsigned long long>(std::hash<std::string>{}(dir.string()) & 0xffffffffffffULL), member);
  return buf;
}

// One member's interval: reuses a finished record of an earlier attempt, else runs it.
pbt::MemberInterval train_member(const pbt::Spec& spec, const fs::path& dir, int m, int64_t interval, int64_t end_step,
                                 const Plan& plan, const std::vector<std::string>& program) {
  pbt::MemberInterval out;
  out.member = m;
  out.run = pbt::run_name(m, interval);
  out.init_from = plan.init_from;
  out.hyperparameters = plan.hyperparameters;
  const fs::path runs = dir / "runs";
  const fs::path record = runs / (out.run + ".json");
  const fs::path ckpt = runs / (out.run + ".ckpt");
  const RecordFile earlier = fs::exists(record) ? read_run_record(record) : RecordFile{};
  // A finished attempt of an interrupted campaign counts: one with its checkpoint, or one that diverged (which
  // keeps none).
  const bool finished = earlier.record && earlier.record->done() &&
                        (fs::exists(ckpt / "header.json") || earlier.record->status == RunStatus::diverged);
  if (!finished) {
    std::error_code ec;
    // An unfinished attempt's outputs: run it again from the start of the interval.
    for (const char* ext : {".json", ".weights", ".mllog"}) fs::remove(runs / (out.run + ext), ec);
    fs::remove_all(ckpt, ec);
    const fs::path config = dir / "configs" / (out.run + ".json");
    write_json_atomic(config, pbt::member_config(spec, plan.hyperparameters, m, out.run, runs), false);
    // Each member slot its own Open MPI session folder: Open MPI 4.1 removes the shared per-host folder when the
    // last job on the host ends, and a member starting at that moment would fail (open-mpi/ompi#8510).
    std::vector<std::string> argv = {"env", "OMPI_MCA_orte_tmpdir_base=" + session_base(dir, m)};
    argv.insert(argv.end(), program.begin(), program.end());
    argv.insert(argv.end(), {config.string(), "--stop-at", std::to_string(end_step)});
    if (!plan.init_from.empty()) argv.insert(argv.end(), {"--init-from", (runs / (plan.init_from + ".ckpt")).string()});
    out.exit_code = slurm::run_to_files(argv, runs / (out.run + ".out"), runs / (out.run + ".err"));
  }
  // A reused record was read above; a run's record is read once it has run.
  const RecordFile r = finished ? earlier : fs::exists(record) ? read_run_record(record) : RecordFile{};
  if (out.exit_code == 0 && r.record && r.record->status == RunStatus::diverged) {
    out.status = "diverged";  // a legitimate outcome: no evaluation to compare, no checkpoint to continue
    out.wall_seconds = r.record->wall_seconds;
    return out;
  }
  // Completed, or reached eval.target_accuracy (a member keeps training past its target).
  const bool ok = out.exit_code == 0 && r.record &&
                  (r.record->status == RunStatus::completed || r.record->status == RunStatus::reached_target) &&
                  !r.record->curve.empty() && r.record->curve.back().step == end_step && fs::exists(ckpt / "header.json");
  out.status = ok ? "completed" : "failed";
  if (ok) {
    out.test_accuracy = r.record->curve.back().test_accuracy;
    out.wall_seconds = r.record->wall_seconds;
  } else if (out.exit_code == 0) {
    out.exit_code = 1;  // ran, but left no usable record (a diverged run, a missing checkpoint)
  }
  return out;
}

int run_pbt(const Args& a) {
  const pbt::Spec spec = pbt::load_spec(a.spec);  // BadInput (exit 2) before anything is written
  const fs::path dir = fs::absolute(a.out);
  const fs::path lineage_file = dir / "lineage.json";
  std::optional<DirLock> lock;
  Lineage l;
  if (fs::exists(lineage_file)) {
    l = pbt::read_lineage(lineage_file);
    if (l.spec != spec.source)
      throw BadInput(lineage_file.string() + ": this folder holds the campaign of another spec; use another --out");
  } else {
    l.name = spec.name, l.mode = spec.mode, l.population = spec.population;
    l.ready_steps = spec.ready_steps, l.total_steps = spec.total_steps, l.seed = spec.seed, l.spec = spec.source;
  }
  const std::vector<std::string> program =
      spec.program.empty() ? std::vector<std::string>{slurm::dtbench_binary(), "train"} : spec.program;
  std::vector<Plan> plans = l.intervals.empty() ? first_plans(spec) : next_plans(l);

  std::printf("%s: %s, %d members, %lld intervals of %lld steps (%lld steps each), %d at a time\n", spec.name.c_str(),
              spec.mode == "pbt" ? "population-based training" : "random search", spec.population,
              static_cast<long long>(spec.intervals()), static_cast<long long>(spec.ready_steps),
              static_cast<long long>(spec.total_steps), spec.concurrency);
  if (a.dry_run) {
    for (int m = 0; m < spec.population; ++m)
      std::printf("  member %d: %s\n", m, plans[size_t(m)].hyperparameters.dump().c_str());
    return 0;
  }
  fs::create_directories(dir / "runs");
  lock.emplace(dir / ".lock");  // one campaign process per folder
  fs::create_directories(dir / "configs");
  write_json_atomic(dir / "spec.json", spec.source, false);

  for (int64_t i = static_cast<int64_t>(l.intervals.size()); i < spec.intervals(); ++i) {
    pbt::Interval iv;
    iv.index = i;
    iv.start_step = i * spec.ready_steps;
    iv.end_step = std::min((i + 1) * spec.ready_steps, spec.total_steps);
    iv.members.resize(size_t(spec.population));
    // A bounded pool: each thread takes the next member until none is left.
    std::atomic<int> next{0};
    std::vector<std::thread> pool;
    std::exception_ptr error;
    std::mutex error_mutex;
    for (int t = 0; t < std::min(spec.concurrency, spec.population); ++t) {
      pool.emplace_back([&] {
        for (int m; (m = next++) < spec.population;) {
          try {
            if (plans[size_t(m)].diverged) {
              pbt::MemberInterval& mi = iv.members[size_t(m)];
              mi.member = m, mi.hyperparameters = plans[size_t(m)].hyperparameters, mi.status = "diverged";
              continue;
            }
            iv.members[size_t(m)] = train_member(spec, dir, m, i, iv.end_step, plans[size_t(m)], program);
          } catch (...) {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!error) error = std::current_exception();
          }
        }
      });
    }
    for (std::thread& t : pool) t.join();
    if (error) std::rethrow_exception(error);

    std::vector<double> scores;
    for (const pbt::MemberInterval& m : iv.members) {
      scores.push_back(m.status == "diverged" ? -HUGE_VAL : m.test_accuracy ? *m.test_accuracy : std::nan(""));
      if (m.status == "failed")
        std::fprintf(stderr, "dtbench pbt: member %d failed in interval %lld (run %s, exit %d): %s\n", m.member,
                     static_cast<long long>(i), m.run.c_str(), m.exit_code,
                     tail_of(dir / "runs" / (m.run + ".err"), 400).c_str());
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
        if (!m.run.empty()) fs::remove_all(dir / "runs" / (m.run + ".ckpt"), ec);
    }
    plans = next_plans(l);
    const pbt::Interval& done = l.intervals.back();
    const int best = l.best_member();
    std::printf("interval %lld (steps %lld-%lld): best member %d at %.4f, %zu replaced, %d failed, %d diverged\n",
                static_cast<long long>(i), static_cast<long long>(done.start_step), static_cast<long long>(done.end_step),
                best, best >= 0 ? *done.members[size_t(best)].test_accuracy : 0.0, done.events.size(),
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
    std::printf("best: member %d, test accuracy %.4f (%s); lineage %s\n", best,
                *l.intervals.back().members[size_t(best)].test_accuracy, l.intervals.back().members[size_t(best)].run.c_str(),
                lineage_file.string().c_str());
  }
  return 0;
}

}  // namespace

void add_pbt_command(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("pbt", "Population-based training: a population of dtbench train runs, exploited and "
                                        "explored at every ready point (Jaderberg et al. 2017)");
  cmd->add_option("spec", a->spec, "PBT spec (JSON; pbt/spec.hpp)")->required();
  cmd->add_option("--out", a->out, "Campaign folder (created; rerun on it to continue)")->required();
  cmd->add_flag("--dry-run", a->dry_run, "Validate the spec and print the first interval's members; write nothing");
  cmd->callback([a] {
    const int code = run_pbt(*a);
    if (code != 0) throw ExitRequest(code);
  });
}

}  // namespace dtbench
