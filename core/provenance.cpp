#include "core/provenance.hpp"

#include <mpi.h>
#include <omp.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <oneapi/dnnl/dnnl.h>

#include "core/cuda_info.hpp"
#include "core/run_record.hpp"
#include "core/git_sha.hpp"
#include "core/version.hpp"

extern "C" char** environ;

namespace dtbench {
namespace {

std::string cpu_isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    default: return "all";
  }
}

// First value of "key : value" lines in a /proc-style file.
std::string proc_field(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "";
}

std::string os_pretty_name() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "unknown";
}

Json cpu_info() {
  Json cpu;
  cpu["model"] = proc_field("/proc/cpuinfo", "model name");
  cpu["logical_cores"] = static_cast<int64_t>(::sysconf(_SC_NPROCESSORS_ONLN));
  // Padded with spaces so that each flag can be matched as " name ". (Built with insert/push_back: GCC 12
  // warns falsely (-Wrestrict) about `" " + string`.)
  std::string flags = proc_field("/proc/cpuinfo", "flags");
  flags.insert(flags.begin(), ' ');
  flags.push_back(' ');
  Json isa = Json::array();
  for (const char* f : {"avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16"})
    if (flags.find(std::string(" ") + f + " ") != std::string::npos) isa.push_back(f);
  cpu["isa_flags"] = isa;
  std::string mem = proc_field("/proc/meminfo", "MemTotal");  // "24570000 kB"
  cpu["memory_bytes"] = mem.empty() ? 0 : static_cast<int64_t>(std::stoll(mem)) * 1024;
  // A memory cgroup's limit (a Slurm job's --mem), when there is one: what the run could use.
  if (const double limit = cgroup_memory_limit("/proc/self/cgroup", "/sys/fs/cgroup"); limit > 0)
    cpu["memory_limit_bytes"] = static_cast<int64_t>(limit);
  return cpu;
}

}  // namespace

std::string bytes_text(double bytes) {
  const char* unit = bytes >= 1e12 ? "TB" : bytes >= 1e9 ? "GB" : bytes >= 1e6 ? "MB" : bytes >= 1e3 ? "kB" : "B";
  const double scale = bytes >= 1e12 ? 1e12 : bytes >= 1e9 ? 1e9 : bytes >= 1e6 ? 1e6 : bytes >= 1e3 ? 1e3 : 1;
  char text[32];
  std::snprintf(text, sizeof text, "%.3g %s", bytes / scale, unit);
  return text;
}

std::string dtbench_build() { return std::string("dtbench ") + DTBENCH_VERSION + " (git " + DTBENCH_GIT_SHA + ")"; }

std::string cpu_isa() { return cpu_isa_name(dnnl_get_effective_cpu_isa()); }

bool cpu_has_bf16_primitives() {
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());  // each ISA's bits hold its subsets'
  return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
}

double cgroup_memory_limit(const std::string& proc_cgroup, const std::string& root) {
  namespace fs = std::filesystem;
  std::ifstream in(proc_cgroup);
  double least = 0;
  const auto consider = [&](const fs::path& file) {
    std::ifstream f(file);
    std::string v;
    if (!(f >> v) || v == "max" || v.empty() || v.find_first_not_of("0123456789") != std::string::npos) return;
    const double bytes = std::strtod(v.c_str(), nullptr);
    if (bytes > 0 && bytes < 1152921504606846976.0 && (least == 0 || bytes < least)) least = bytes;  // 2^60: "none"
  };
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    // ",cpu,memory,": each controller matched as ",name," (built with append: GCC 12 warns falsely (-Wrestrict)
    // about `"," + string`).
    std::string controllers(1, ',');
    controllers.append(line, a + 1, b - a - 1).push_back(',');
    const std::string path = line.substr(b + 1);
    fs::path base, file;
    if (line.compare(0, a, "0") == 0 && controllers == ",,") base = root, file = "memory.max";
    else if (controllers.find(",memory,") != std::string::npos) base = fs::path(root) / "memory", file = "memory.limit_in_bytes";
    else continue;
    for (fs::path p = fs::path(path).relative_path();; p = p.parent_path()) {
      consider(base / p / file);
      if (p.empty()) break;
    }
  }
  return least;
}

namespace {
double machine_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}
double cgroup_limit_of_this_process() {
  static const double limit = cgroup_memory_limit("/proc/self/cgroup", "/sys/fs/cgroup");
  return limit;
}
}  // namespace

double physical_memory_bytes() {
  const double physical = machine_memory_bytes(), limit = cgroup_limit_of_this_process();
  return limit > 0 && (physical <= 0 || limit < physical) ? limit : physical;
}

std::string memory_limit_note() {
  const double physical = machine_memory_bytes(), limit = cgroup_limit_of_this_process();
  if (!(limit > 0 && (physical <= 0 || limit < physical))) return "";
  return " (the limit of this process's memory cgroup, a Slurm job's --mem or a container's; the machine has " +
         bytes_text(physical) + ")";
}

namespace {

Json mpi_info() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);  // allowed before MPI_Init
  std::string lib(version, static_cast<size_t>(len));
  while (!lib.empty() && (lib.back() == '\n' || lib.back() == '\0')) lib.pop_back();
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  Json mpi;
  mpi["library"] = lib.substr(0, lib.find(','));
  mpi["library_version_string"] = lib;
  mpi["standard"] = std::to_string(major) + "." + std::to_string(minor);
  int initialized = 0;
  MPI_Initialized(&initialized);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    int size = 1, provided = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Query_thread(&provided);
    mpi["world_size"] = size;
    mpi["thread_level"] = provided == MPI_THREAD_MULTIPLE ? "multiple"
                          : provided == MPI_THREAD_SERIALIZED ? "serialized"
                          : provided == MPI_THREAD_FUNNELED ? "funneled" : "single";
  }
  return mpi;
}

const char* env_or_null(const char* name) { return std::getenv(name); }

// Slurm's job, node list and task layout: present only when run inside a Slurm allocation.
Json slurm_info() {
  if (!env_or_null("SLURM_JOB_ID")) return nullptr;
  Json s;
  const std::pair<const char*, const char*> keys[] = {
      {"job_id", "SLURM_JOB_ID"},           {"job_name", "SLURM_JOB_NAME"},
      {"array_job_id", "SLURM_ARRAY_JOB_ID"}, {"array_task_id", "SLURM_ARRAY_TASK_ID"},
      {"partition", "SLURM_JOB_PARTITION"},  {"node_list", "SLURM_JOB_NODELIST"},
      {"nodes", "SLURM_JOB_NUM_NODES"},      {"ntasks", "SLURM_NTASKS"},
      {"tasks_per_node", "SLURM_TASKS_PER_NODE"}, {"cpus_per_task", "SLURM_CPUS_PER_TASK"},
      {"step_id", "SLURM_STEP_ID"},          {"procid", "SLURM_PROCID"},
      {"localid", "SLURM_LOCALID"},          {"node_name", "SLURMD_NODENAME"},
      {"restart_count", "SLURM_RESTART_COUNT"}};
  for (const auto& [key, var] : keys)
    if (const char* v = env_or_null(var)) s[key] = v;
  return s;
}

// Environment variables that change performance or results.
Json selected_env() {
  Json env = Json::object();
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    std::string k = kv.substr(0, eq);
    for (const char* prefix : {"OMP_", "KMP_", "DNNL_", "ONEDNN_", "OMPI_MCA_", "NCCL_", "CUDA_VISIBLE_DEVICES",
                               "OPENBLAS_", "MKL_"}) {
      if (k.rfind(prefix, 0) == 0) {
        env[k] = kv.substr(eq + 1);
        break;
      }
    }
  }
  return env;
}

}  // namespace

Json provenance() {
  Json p;
  p["dtbench"] = {{"version", DTBENCH_VERSION},
                  {"git_sha", DTBENCH_GIT_SHA},
                  {"build_type", DTBENCH_BUILD_TYPE},
#if defined(__clang__)
                  {"compiler", std::string("clang++ ") + __clang_version__},
#else
                  {"compiler", std::string("g++ ") + __VERSION__},
#endif
                  {"cxx_flags", DTBENCH_CXX_FLAGS}};
  const dnnl_version_t* v = dnnl_version();
  p["onednn"] = {{"version", std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch)},
                 {"git_hash", v->hash},
                 {"cpu_isa", cpu_isa()},
                 {"cpu_runtime", "openmp"},
                 {"threads", omp_get_max_threads()}};
  p["mpi"] = mpi_info();
  p["cuda"] = cuda_info();
  p["cpu"] = cpu_info();
  utsname u{};
  ::uname(&u);
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  p["os"] = {{"name", os_pretty_name()}, {"kernel", std::string(u.sysname) + " " + u.release}, {"arch", u.machine}};
  p["host"] = host;
  p["slurm"] = slurm_info();
  p["env"] = selected_env();
  p["time_utc"] = utc_timestamp();
  // The environment, the host name and /proc's texts are bytes, not necessarily UTF-8 (SLURM_JOB_NAME=$'n\xff'), and
  // JSON must be: an invalid byte becomes U+FFFD here rather than failing the record after the run.
  return Json::parse(p.dump(-1, ' ', false, Json::error_handler_t::replace));
}

}  // namespace dtbench
