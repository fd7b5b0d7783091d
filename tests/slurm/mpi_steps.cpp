// mpi_steps: a tiny MPI program with the process contract of `dtbench train`, so the Slurm plumbing
// (sbatch scripts, srun --mpi=pmix across emulated nodes, signal forwarding, requeue, resume, sweep
// skipping) can be tested on its own. It trains nothing: it counts /duration/steps steps of
// --step-seconds each.
//
//   mpi_steps [--step-seconds=S] [--tag=TEXT] CONFIG.json [--resume]
//
// Like the trainer it reads a run config (validated with config::load on K ranks), writes a
// schema-valid run record to /output/dir/<record>, stops all ranks at the next step boundary on
// SIGUSR1 or SIGTERM, writes <record minus .json>.ckpt and a record with status "preempted" and
// exits with 3; with --resume it continues from the checkpoint and replaces the preempted record.
// Every rank reports its rank, the world size, SLURMD_NODENAME and the CPUs it may run on (Cpus_allowed_list, to
// check where a launcher placed it); the record keeps the first three in
// /extra/rank_nodes, and --tag's text in /extra/tag (to check that arguments arrive literally).
#include <mpi.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "core/atomic_file.hpp"
#include "config/run_config.hpp"
#include "core/error.hpp"
#include "core/run_record.hpp"
#include "core/timer.hpp"

namespace fs = std::filesystem;
using dtbench::Json;

namespace {

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int s) { g_signal = s; }

// This process's Cpus_allowed_list from /proc/self/status ("?" where there is none).
std::string allowed_cpus() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Cpus_allowed_list:", 0) == 0) return line.substr(line.find_first_not_of(" \t", 18));
  return "?";
}

std::string node_name() {
  if (const char* n = std::getenv("SLURMD_NODENAME")) return n;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::signal(SIGUSR1, on_signal);
  std::signal(SIGTERM, on_signal);

  double step_seconds = 0.05;
  std::string tag, config_file;
  bool resume = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--step-seconds=", 0) == 0) step_seconds = std::stod(a.substr(15));
    else if (a.rfind("--tag=", 0) == 0) tag = a.substr(6);
    else if (a == "--resume") resume = true;
    else config_file = a;
  }
  Json config;
  try {
    config = dtbench::config::load(config_file, {}, size);
  } catch (const dtbench::Error& e) {
    if (rank == 0) std::cerr << "mpi_steps: " << e.what() << "\n";
    MPI_Finalize();
    return 2;
  }
  std::string record_name = config["output"]["record"].get<std::string>();
  if (record_name.empty()) record_name = config["name"].get<std::string>() + ".json";
  fs::path record = fs::path(config["output"]["dir"].get<std::string>()) / record_name;
  fs::path ckpt = record;
  ckpt.replace_extension(".ckpt");
  if (rank == 0) fs::create_directories(record.parent_path());

  int64_t total = config["duration"]["steps"].get<int64_t>();
  if (total == 0) total = 10 * config["duration"]["epochs"].get<int64_t>();
  int64_t start = 0;
  if (resume && fs::exists(ckpt)) start = dtbench::read_json_file(ckpt.string(), "checkpoint")["step"].get<int64_t>();
  bool replacing = false;
  if (fs::exists(record)) {
    dtbench::RecordFile old = dtbench::read_run_record(record);
    if (!old.record || old.record->status != dtbench::RunStatus::preempted || !resume) {
      std::string what = old.record ? to_string(old.record->status) : old.problem;
      if (rank == 0) std::cerr << "mpi_steps: " << record << " exists (" << what << ")\n";
      MPI_Finalize();
      return 2;
    }
    replacing = true;
  }
  std::printf("mpi_steps: rank %d of %d on node %s, steps %ld..%ld, restart %s, cpus %s\n", rank, size,
              node_name().c_str(), static_cast<long>(start), static_cast<long>(total),
              std::getenv("SLURM_RESTART_COUNT") ? std::getenv("SLURM_RESTART_COUNT") : "0", allowed_cpus().c_str());
  std::fflush(stdout);

  // Every rank's node name, gathered on rank 0 (fixed-size slots keep it one collective).
  constexpr int kSlot = 64;
  char mine[kSlot] = {};
  std::strncpy(mine, node_name().c_str(), kSlot - 1);
  std::vector<char> all(static_cast<size_t>(kSlot) * static_cast<size_t>(size));
  MPI_Gather(mine, kSlot, MPI_CHAR, all.data(), kSlot, MPI_CHAR, 0, MPI_COMM_WORLD);

  dtbench::RunRecord r;
  r.name = config["name"].get<std::string>();
  r.config = config;
  r.ranks = size;
  r.global_batch = dtbench::config::global_batch(config, size);
  r.per_rank_batch = dtbench::config::per_rank_batch(config, size);
  r.started_utc = dtbench::utc_timestamp();
  Json nodes = Json::array();
  for (int i = 0; i < size; ++i) nodes.push_back(std::string(&all[static_cast<size_t>(i) * kSlot]));
  r.extra = {{"fixture", "tests/slurm/mpi_steps"}, {"rank_nodes", nodes}, {"tag", tag}, {"resumed_from_step", start}};

  dtbench::Stopwatch sw;
  int64_t step = start;
  int stop = 0;
  while (step < total) {
    std::this_thread::sleep_for(std::chrono::duration<double>(step_seconds));
    ++step;
    int mine_sig = g_signal;
    MPI_Allreduce(&mine_sig, &stop, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (stop) break;
  }
  r.steps = step;
  r.wall_seconds = sw.seconds();
  r.finished_utc = dtbench::utc_timestamp();
  r.samples = step * r.global_batch;
  r.images_per_second = r.wall_seconds > 0 ? double(r.samples - start * r.global_batch) / r.wall_seconds : 0;
  int code = 0;
  if (rank == 0) {
    if (stop) {
      dtbench::write_json_atomic(ckpt, Json{{"step", step}}, false);
      r.status = dtbench::RunStatus::preempted;
      r.status_detail = "signal " + std::to_string(stop) + " at step " + std::to_string(step);
    } else {
      r.status = dtbench::RunStatus::completed;
    }
    dtbench::write_json_atomic(record, r.to_json(), !replacing);
    if (!stop) fs::remove(ckpt);
    std::printf("mpi_steps: %s at step %ld\n", stop ? "preempted" : "completed", static_cast<long>(step));
  }
  if (stop) code = 3;
  MPI_Finalize();
  return code;
}
