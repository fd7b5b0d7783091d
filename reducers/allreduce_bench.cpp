#include "reducers/allreduce_bench.hpp"
#include "reducers/commands.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "core/atomic_file.hpp"
#include "core/cli_checks.hpp"
#include "core/cuda_info.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "core/timer.hpp"
#include "reducers/exchange.hpp"
#include "reducers/hierarchical.hpp"
#include "reducers/mpi_comm.hpp"
#include "reducers/mpi_session.hpp"
#include "reducers/pattern.hpp"
#include "reducers/registry.hpp"
#include "reducers/shared_memory.hpp"
#include "reducers/thread_comm.hpp"
#include "reducers/traffic.hpp"
#ifdef DTBENCH_HAVE_CUDA
#include "core/cuda/cuda_check.hpp"
#include "reducers/nccl_reducer.hpp"
#endif

namespace dtbench {

size_t parse_bytes(const std::string& text, const std::string& option) {
  size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  std::string digits = text.substr(0, pos), suffix = text.substr(pos);
  size_t shift = 0;
  if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else if (!suffix.empty()) digits.clear();
  if (digits.empty() || (digits.size() > 1 && digits[0] == '0'))  // 064 is no size in decimal (README: numbers)
    throw BadInput(option + ": '" + text + "' is not a byte size (an integer in decimal digits without a leading 0, "
                   "with an optional K, M or G suffix)");
  // Digit by digit, so that no size wraps (17179869184G is 2^64 bytes, which a size_t would hold as 0).
  size_t value = 0;
  for (char d : digits) {
    value = value * 10 + static_cast<size_t>(d - '0');
    if (value > (kMaxBytes >> shift))
      throw BadInput(option + ": '" + text + "' is more than 2^40 bytes (1024G), larger than any one buffer here");
  }
  return value << shift;
}

std::vector<size_t> sweep_sizes(size_t min_bytes, size_t max_bytes, double factor) {
  std::vector<size_t> out;
  for (size_t s = min_bytes; s <= max_bytes;) {
    size_t rounded = s / sizeof(float) * sizeof(float);
    if (out.empty() || out.back() != rounded) out.push_back(rounded);
    if (out.size() > kMaxSweepSizes)
      throw BadInput("-f/--stepfactor: " + Json(factor).dump() + " from -b " + std::to_string(min_bytes) +
                     " to -e " + std::to_string(max_bytes) + " gives more than " + std::to_string(kMaxSweepSizes) +
                     " sizes; take a larger factor or a narrower range");
    double next = std::floor(static_cast<double>(s) * factor);
    if (next > static_cast<double>(max_bytes)) break;
    s = std::max(s + 1, static_cast<size_t>(next));
  }
  return out;
}

std::vector<std::string> resolve_reducers(const std::string& spec, bool mpi_transport, bool one_node) {
  std::vector<std::string> out;
  // getline drops a trailing empty item ("ring,"): an empty list item anywhere is refused alike.
  if (!spec.empty() && spec.back() == ',') throw BadInput("--reducer: unknown reducer ''; an empty item in '" + spec + "'");
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "all") {
      for (const auto& n : reducer_names())
        if ((n != "mpi" || mpi_transport) && (n != "shared_memory" || one_node)) out.push_back(n);
      continue;
    }
    const ReducerInfo* info = find_reducer(item);
    if (info != nullptr && info->kind == ReducerKind::kGpuOnly) {  // never part of "all", which must run anywhere
      out.push_back(item);
      continue;
    }
    if (item == "mpi" && !mpi_transport)
      throw BadInput("--reducer: 'mpi' (MPI_Allreduce) needs the MPI transport, not --transport thread");
    if (std::find(reducer_names().begin(), reducer_names().end(), item) == reducer_names().end()) {
      std::string valid;
      for (const auto& n : reducer_names()) valid += (valid.empty() ? "" : ", ") + n;
      for (const ReducerInfo& r : reducer_registry())
        if (r.kind == ReducerKind::kGpuOnly) valid += ", " + r.name + " (GPU)";
      throw BadInput("--reducer: unknown reducer '" + item + "'; valid names: " + valid + ", all");
    }
    out.push_back(item);
  }
  if (out.empty()) throw BadInput("--reducer: no reducer named");
  // "ring,ring" or "all,ring" would time one reducer twice, two rows.
  if (const std::string* twice = cli::first_repeated(out))
    throw BadInput("--reducer: '" + *twice + "' is named twice in '" + spec + "'");
  return out;
}

constexpr int kMaxIters = 10000000;

void validate(const AllreduceOptions& o) {
  if (!(o.step_factor > 1.0) || std::isinf(o.step_factor))
    throw BadInput("-f/--stepfactor must be a finite number > 1, got " + std::to_string(o.step_factor));
  // Sizes are whole floats (rounded down): a smallest size under one float would time a 0-byte reduction.
  if (o.min_bytes < sizeof(float))
    throw BadInput("-b/--minbytes must be at least 4 (one float), got " + std::to_string(o.min_bytes));
  if (o.min_bytes > o.max_bytes)
    throw BadInput("-b/--minbytes (" + std::to_string(o.min_bytes) + ") must be <= -e/--maxbytes (" +
                   std::to_string(o.max_bytes) + ")");
  // Each rank keeps every timed iteration's time (8 bytes): 2^31 - 1 of them were killed by the kernel at 23 GB.
  sweep_sizes(o.min_bytes, o.max_bytes, o.step_factor);  // their count, refused here (before any rank starts)
  if (o.iters < 1 || o.iters > kMaxIters)
    throw BadInput("-n/--iters must be in [1, " + std::to_string(kMaxIters) + "] (each rank keeps every iteration's "
                   "time), got " + std::to_string(o.iters));
  if (o.warmup < 0) throw BadInput("-w/--warmup_iters must be >= 0, got " + std::to_string(o.warmup));
  if (o.check_iters < 0) throw BadInput("-c/--check must be >= 0, got " + std::to_string(o.check_iters));
  if (o.reducer_options.segment_bytes < sizeof(float))
    throw BadInput("--segment-bytes must be >= 4, got " + std::to_string(o.reducer_options.segment_bytes));
  if (o.reducer_options.small_segment_bytes < sizeof(float))
    throw BadInput("--small-segment-bytes must be >= 4, got " + std::to_string(o.reducer_options.small_segment_bytes));
  if (o.reducer_options.servers < 1)
    throw BadInput("--servers must be >= 1, got " + std::to_string(o.reducer_options.servers));
  if (o.reducer_options.ranks_per_node < 0)
    throw BadInput("--ranks-per-node must be >= 0, got " + std::to_string(o.reducer_options.ranks_per_node));
  try {  // whether or not hierarchical runs: a misspelt leader was accepted and ignored
    Hierarchical::check_leader(o.reducer_options.leader);
  } catch (const BadInput& e) {
    throw BadInput(std::string("--leader: ") + e.what());
  }
}

namespace {

// Small collectives for the driver's bookkeeping, over the Comm itself (linear: rank 0 gathers, then
// sends the table back), so the driver runs on any transport. Outside every timed and counted region.
template <class T>
std::vector<T> gather_to_all(Comm& c, const T& x) {
  const int tag = kTagDriver;
  std::vector<T> all(static_cast<size_t>(c.size()));
  all[static_cast<size_t>(c.rank())] = x;
  if (c.rank() == 0) {
    for (int r = 1; r < c.size(); ++r) c.recv(r, &all[static_cast<size_t>(r)], sizeof(T), tag);
    for (int r = 1; r < c.size(); ++r) c.send(r, all.data(), all.size() * sizeof(T), tag);
  } else {
    c.send(0, &x, sizeof(T), tag);
    c.recv(0, all.data(), all.size() * sizeof(T), tag);
  }
  return all;
}

double max_over_ranks(Comm& c, double x) {
  const std::vector<double> all = gather_to_all(c, x);
  return *std::max_element(all.begin(), all.end());
}

uint64_t sum_over_ranks(Comm& c, uint64_t x) {
  const std::vector<uint64_t> all = gather_to_all(c, x);
  return std::accumulate(all.begin(), all.end(), uint64_t{0});
}

void one_allreduce(Reducer& r, float* data, size_t count, bool async) {
  if (async) {
    r.start(data, count);
    r.wait();
  } else {
    r.allreduce(data, count);
  }
}

// One allreduce with the Comm's counters reset before it: each rank's bytes and messages (arrays indexed
// by rank), and the reducer's closed form (reducers/traffic.hpp) beside them; null where it has none
// (mpi, nccl: their bytes move inside the library, where the Comm counts nothing). Every rank's earlier
// transfers have completed on that rank, so the counts are this call's alone.
Json count_traffic(Comm& c, Reducer& r, float* data, size_t count, bool async, const ReducerOptions& options) {
  c.reset_traffic();
  one_allreduce(r, data, count, async);
  const std::vector<CommTraffic> all = gather_to_all(c, c.traffic());
  Json t = {{"sent_bytes", Json::array()},
            {"received_bytes", Json::array()},
            {"sent_messages", Json::array()},
            {"received_messages", Json::array()},
            {"expected_sent_bytes", nullptr},
            {"expected_received_bytes", nullptr}};
  for (const CommTraffic& x : all) {
    t["sent_bytes"].push_back(x.sent_bytes);
    t["received_bytes"].push_back(x.received_bytes);
    t["sent_messages"].push_back(x.sent_messages);
    t["received_messages"].push_back(x.received_messages);
  }
  if (reducer_info(r.name()).traffic != nullptr) {
    t["expected_sent_bytes"] = Json::array();
    t["expected_received_bytes"] = Json::array();
    for (const RankBytes& b : expected_traffic(r.name(), c.size(), count * sizeof(float), options)) {
      t["expected_sent_bytes"].push_back(b.sent);
      t["expected_received_bytes"].push_back(b.received);
    }
  }
  return t;
}

// Local reduction kernel (dst += src) at each size, on all ranks at once as in the algorithms: the
// per-byte reduction cost gamma of the cost model.
Json time_reduction(Comm& c, const std::vector<size_t>& sizes, int iters, std::vector<float>& a,
                    std::vector<float>& b) {
  Json rows = Json::array();
  for (size_t bytes : sizes) {
    const size_t count = bytes / sizeof(float);
    sum_into(a.data(), b.data(), count);  // warm
    c.barrier();
    std::vector<double> times(static_cast<size_t>(iters));
    Stopwatch sw;
    double last = 0;
    for (int i = 0; i < iters; ++i) {
      sum_into(a.data(), b.data(), count);
      const double now = sw.seconds();
      times[static_cast<size_t>(i)] = now - last;
      last = now;
    }
    const double t = max_over_ranks(c, last / iters);
    std::nth_element(times.begin(), times.begin() + iters / 2, times.end());
    const double t_median = max_over_ranks(c, times[static_cast<size_t>(iters / 2)]);
    rows.push_back({{"bytes", bytes}, {"time_us", t * 1e6}, {"time_median_us", t_median * 1e6}});
  }
  return rows;
}

}  // namespace

Json run_allreduce_sweep(Comm& comm, const AllreduceOptions& o, std::ostream* table) {
  validate(o);
  const int p = comm.size();
  const std::vector<size_t> sizes = sweep_sizes(o.min_bytes, o.max_bytes, o.step_factor);
  const size_t max_count = sizes.empty() ? 0 : sizes.back() / sizeof(float);
  std::vector<float> buf(max_count), other(max_count, 1.0f);
  CheckPattern pattern(p);
  pattern.fill(comm.rank(), buf.data(), max_count);  // touches every page before timing

  // The launcher's nodes, resolved once: the hierarchical reducer groups by them and its traffic formula needs them.
  ReducerOptions ro = o.reducer_options;
  if (ro.ranks_per_node == 0 && ro.nodes.empty()) ro.nodes = comm.nodes();
  std::vector<std::unique_ptr<Reducer>> reducers;
  for (const auto& name : o.reducers) reducers.push_back(make_reducer(name, comm, ro));
#ifdef DTBENCH_HAVE_CUDA
  // NCCL reduces device buffers, as nccl-tests does: it gets a device copy of the same data.
  gpu::DeviceBuffer device_buf;
  if (std::find(o.reducers.begin(), o.reducers.end(), "nccl") != o.reducers.end())
    device_buf = gpu::DeviceBuffer(std::max<size_t>(max_count, 1) * sizeof(float));
#endif

  if (table) {
    *table << "# dtbench allreduce: " << p << " ranks (" << comm.transport() << " transport), " << o.iters
           << " iterations, " << o.warmup << " warm-up, " << o.check_iters << " check"
           << (o.async ? ", async start/wait" : "") << "\n"
           << "#\n";
  }
  char line[256];
  if (table) {
    std::snprintf(line, sizeof line, "# %12s %12s %18s %11s %11s %11s %8s\n", "size", "count", "reducer", "time",
                  "algbw", "busbw", "#wrong");
    *table << line;
    std::snprintf(line, sizeof line, "# %12s %12s %18s %11s %11s %11s %8s\n", "(B)", "(elements)", "", "(us)",
                  "(GB/s)", "(GB/s)", "");
    *table << line << std::flush;
  }

  Json rows = Json::array();
  uint64_t wrong_total = 0;
  std::vector<double> iter_times(static_cast<size_t>(o.iters));
  for (size_t bytes : sizes) {
    const size_t count = bytes / sizeof(float);
    for (auto& r : reducers) {
      float* data = buf.data();
#ifdef DTBENCH_HAVE_CUDA
      const bool on_device = r->name() == "nccl";
      if (on_device) {
        data = device_buf.as<float>();
        DTB_CUDA(cudaMemcpy(data, buf.data(), bytes, cudaMemcpyHostToDevice));
      }
#endif
      for (int i = 0; i < o.warmup; ++i) one_allreduce(*r, data, count, o.async);
      comm.barrier();
      Stopwatch sw;
      double last = 0;
      for (int i = 0; i < o.iters; ++i) {
        one_allreduce(*r, data, count, o.async);
        const double now = sw.seconds();
        iter_times[static_cast<size_t>(i)] = now - last;
        last = now;
      }
      const double t = max_over_ranks(comm, last / o.iters);
      std::nth_element(iter_times.begin(), iter_times.begin() + o.iters / 2, iter_times.end());
      const double t_median = max_over_ranks(comm, iter_times[static_cast<size_t>(o.iters / 2)]);
      Json traffic = count_traffic(comm, *r, data, count, o.async, ro);

      uint64_t wrong = 0;
      for (int i = 0; i < o.check_iters; ++i) {
        pattern.fill(comm.rank(), buf.data(), count);
#ifdef DTBENCH_HAVE_CUDA
        if (on_device) DTB_CUDA(cudaMemcpy(data, buf.data(), bytes, cudaMemcpyHostToDevice));
#endif
        one_allreduce(*r, data, count, o.async);
#ifdef DTBENCH_HAVE_CUDA
        if (on_device) DTB_CUDA(cudaMemcpy(buf.data(), data, bytes, cudaMemcpyDeviceToHost));
#endif
        wrong += pattern.count_wrong(buf.data(), count);
      }
      wrong = sum_over_ranks(comm, wrong);
      wrong_total += wrong;

      const double algbw = t > 0 ? static_cast<double>(bytes) / t / 1e9 : 0.0;
      const double factor = r->bus_factor(p);
      rows.push_back({{"bytes", bytes},
                      {"count", count},
                      {"reducer", r->name()},
                      {"ranks", p},
                      {"time_us", t * 1e6},
                      {"time_median_us", t_median * 1e6},
                      {"algbw_gbps", algbw},
                      {"busbw_gbps", algbw * factor},
                      {"bus_factor", factor},
                      {"wrong", o.check_iters > 0 ? Json(wrong) : Json(nullptr)},
                      {"traffic", std::move(traffic)}});
      if (table) {
        // Nothing checked (-c 0): N/A, as nccl-tests prints it, not a 0 that reads as checked and right.
        const std::string wrong_text = o.check_iters > 0 ? std::to_string(wrong) : "N/A";
        std::snprintf(line, sizeof line, "  %12zu %12zu %18s %11.2f %11.3f %11.3f %8s\n", bytes, count,
                      r->name().c_str(), t * 1e6, algbw, algbw * factor, wrong_text.c_str());
        *table << line << std::flush;
      }
    }
  }
  Json reduction = time_reduction(comm, sizes, o.iters, buf, other);

  if (table) {
    if (o.check_iters > 0)
      *table << "# Out of bounds values : " << wrong_total << (wrong_total == 0 ? " OK" : " FAILED") << "\n";
    else
      *table << "# Out of bounds values : N/A (-c 0: no result checked)\n";
    for (auto& r : reducers) {
      double sum = 0;
      int n = 0;
      for (const auto& row : rows)
        if (row["reducer"] == r->name()) sum += row["busbw_gbps"].get<double>(), ++n;
      std::snprintf(line, sizeof line, "# Avg bus bandwidth    : %8.3f GB/s  %s\n", n ? sum / n : 0.0,
                    r->name().c_str());
      *table << line;
    }
    *table << std::flush;
  }
  // "wrong" is null where nothing was checked (-c 0), as the table's N/A: a 0 read as checked and right.
  return {{"ranks", p}, {"transport", comm.transport()}, {"nodes", comm.nodes()}, {"rows", rows},
          {"reduction", reduction}, {"wrong", o.check_iters > 0 ? Json(wrong_total) : Json(nullptr)}};
}

namespace {

struct CliOptions {
  std::string minbytes = "4K", maxbytes = "64M";
  double stepfactor = 2.0;
  int iters = 20, warmup = 5, check = 1;
  std::string reducer = "all";
  int servers = 1;
  std::string leader = "ring";
  int ranks_per_node = 0;
  std::string segment = "1M";
  std::string small_segment = "4032";
  std::string small_transfer = "16K";
  bool async = false;
  std::string json;
  std::string transport = "mpi";
  int ranks = 2;
  bool ranks_given = false, json_given = false;  // on the command line
  bool servers_given = false, leader_given = false, ranks_per_node_given = false;
};

// Whether --reducer selected `name`.
bool selects(const AllreduceOptions& o, const char* name) {
  return std::find(o.reducers.begin(), o.reducers.end(), name) != o.reducers.end();
}

// What the job's ranks and nodes refuse, as the reducers' constructors would, but found before any is built (a
// constructor's error came from every rank at once, then mpirun's abort banner): more parameter servers than ranks;
// hierarchical's parameter server with more servers than node leaders; shared_memory across nodes. `nodes`: each
// rank's node as the launcher placed it (empty: one node). "" when none.
std::string layout_error(const AllreduceOptions& o, int ranks, const std::vector<int>& nodes = {}) {
  if (o.reducer_options.servers > ranks)
    return "--servers (" + std::to_string(o.reducer_options.servers) + ") must be <= the rank count (" +
           std::to_string(ranks) + ")";
  if (selects(o, "hierarchical")) {
    ReducerOptions ro = o.reducer_options;
    if (ro.ranks_per_node == 0 && ro.nodes.empty()) ro.nodes = nodes.empty() ? std::vector<int>(size_t(ranks), 0) : nodes;
    try {
      const std::vector<int> layout = Hierarchical::node_layout(ranks, ro, nullptr);
      const int64_t leaders = layout.empty() ? 0 : *std::max_element(layout.begin(), layout.end()) + 1;
      if (const std::string e = Hierarchical::leader_servers_problem(ro.leader, ro.servers, leaders); !e.empty())
        return "hierarchical: --servers: " + e;
    } catch (const BadInput& e) {
      return e.what();
    }
  }
  return selects(o, "shared_memory") ? SharedMemory::layout_problem(nodes) : "";
}

// Bad input when the sweep could not hold its buffers: each rank holds the data and the operand of the
// largest size (2 x -e) and one scratch per reducer (at most -e each), and `ranks_here` ranks share this
// machine's memory.
void check_memory(const AllreduceOptions& o, const std::string& maxbytes, int ranks_here) {
  const double need = static_cast<double>(o.max_bytes) * static_cast<double>(2 + o.reducers.size()) * ranks_here;
  const double have = physical_memory_bytes();
  if (need > have) {
    char line[256];
    const std::string ranks = ranks_here == 1 ? "for this rank" : "for each of " + std::to_string(ranks_here) +
                                                                   " ranks on this machine";
    std::snprintf(line, sizeof line,
                  "-e/--maxbytes: %s would need %.3g GB here ((2 + %zu reducers) buffers of up to -e bytes %s); it "
                  "has %.3g GB of memory",
                  maxbytes.c_str(), need / 1e9, o.reducers.size(), ranks.c_str(), have / 1e9);
    throw BadInput(line + memory_limit_note());
  }
}

Json options_json(const AllreduceOptions& o, const CliOptions& cli) {
  return {{"minbytes", o.min_bytes},      {"maxbytes", o.max_bytes},    {"stepfactor", o.step_factor},
          {"iters", o.iters},             {"warmup_iters", o.warmup},   {"check_iters", o.check_iters},
          {"reducers", o.reducers},       {"servers", o.reducer_options.servers},
          {"segment_bytes", o.reducer_options.segment_bytes},
          {"small_segment_bytes", o.reducer_options.small_segment_bytes},
          {"small_transfer_bytes", o.reducer_options.small_transfer_bytes}, {"async", o.async},
          {"leader", o.reducer_options.leader},     {"ranks_per_node", o.reducer_options.ranks_per_node},
          {"transport", cli.transport}};
}

// The options checked before MPI starts (bad input costs nothing then); with `on_this_machine`, also that the buffers
// fit this machine's memory. Throws BadInput.
AllreduceOptions checked_options(const CliOptions& cli, bool on_this_machine = true) {
  AllreduceOptions o;
  o.min_bytes = parse_bytes(cli.minbytes, "-b/--minbytes");
  o.max_bytes = parse_bytes(cli.maxbytes, "-e/--maxbytes");
  o.step_factor = cli.stepfactor;
  o.iters = cli.iters;
  o.warmup = cli.warmup;
  o.check_iters = cli.check;
  o.async = cli.async;
  o.reducer_options.servers = cli.servers;
  o.reducer_options.leader = cli.leader;
  o.reducer_options.ranks_per_node = cli.ranks_per_node;
  // Segments are whole floats, as the sizes are: rounded down here, so the --json options say what ran (6 was
  // recorded as 6 and ran as 4; found by a hunt).
  o.reducer_options.segment_bytes = whole_float_bytes(parse_bytes(cli.segment, "--segment-bytes"));
  o.reducer_options.small_segment_bytes = whole_float_bytes(parse_bytes(cli.small_segment, "--small-segment-bytes"));
  o.reducer_options.small_transfer_bytes = parse_bytes(cli.small_transfer, "--small-transfer-bytes");
  if (cli.transport != "mpi" && cli.transport != "thread")
    throw BadInput("--transport must be mpi or thread, got '" + cli.transport + "'");
  if (cli.transport == "thread" && launched_ranks() >= 2)
    throw BadInput("--transport thread runs its ranks as threads of this one process (--ranks), but the launcher "
                   "started " + std::to_string(launched_ranks()) + " processes: each would run the whole sweep and "
                   "write --json; run it without mpirun or srun");
  if (cli.ranks_given && cli.transport == "mpi")
    throw BadInput("--ranks is for --transport thread; under MPI the rank count is the launcher's (mpirun -np K)");
  if (cli.json_given && cli.json.empty()) throw BadInput("--json: an empty file name");
  const bool mpi = cli.transport == "mpi";
  o.reducers = resolve_reducers(cli.reducer, mpi);
  validate(o);
  // An option that no selected reducer reads would be accepted and ignored, and the sweep's JSON would record it
  // as if it had shaped the figures: refused, naming the reducers that read it.
  const auto selected = [&] {
    std::string list;
    for (const auto& r : o.reducers) list += (list.empty() ? "" : ",") + r;
    return list;
  };
  if (cli.servers_given && !selects(o, "parameter_server") &&
      !(selects(o, "hierarchical") && o.reducer_options.leader == "parameter_server"))
    throw BadInput("--servers: no selected reducer reads it (parameter_server does, and hierarchical with --leader "
                   "parameter_server); --reducer selects " + selected());
  if ((cli.leader_given || cli.ranks_per_node_given) && !selects(o, "hierarchical"))
    throw BadInput(std::string(cli.leader_given ? "--leader" : "--ranks-per-node") +
                   ": no selected reducer reads it (only hierarchical does); --reducer selects " + selected());
  if (!mpi && o.reducer_options.leader == "mpi" && selects(o, "hierarchical"))
    throw BadInput("--leader: 'mpi' (MPI_Allreduce among the node leaders) needs the MPI transport, not --transport "
                   "thread");
  if (!mpi && (cli.ranks < 1 || cli.ranks > kMaxThreadRanks))
    throw BadInput("--ranks must be in [1, " + std::to_string(kMaxThreadRanks) + "] for --transport thread, got " +
                   std::to_string(cli.ranks) + " (each rank is a thread of this process with its own stack; run "
                   "more ranks under mpirun)");
  // Under MPI the ranks per machine are not known yet: each rank's own need first, the node's once MPI runs.
  if (on_this_machine) check_memory(o, cli.maxbytes, mpi ? 1 : cli.ranks);
  return o;
}

// Under MPI, an error found before MPI started is every rank's (mpirun starts them with the same options) or one
// rank's (its MPMD form): the ranks agree, and rank 0 alone prints the lowest failing rank's message, naming that
// rank when the others did not fail, so that 8 ranks print one line and not 8. Returns when no rank failed.
void agree_on_early_error(MpiComm& comm, const std::string& mine, std::optional<EarlyErrorWatchdog>& watchdog) {
  const std::vector<uint64_t> failed = gather_to_all(comm, static_cast<uint64_t>(mine.empty() ? 0 : 1));
  if (watchdog) watchdog->disarm();  // every rank is in MPI
  const auto first = std::find(failed.begin(), failed.end(), uint64_t{1});
  if (first == failed.end()) return;
  const int from = static_cast<int>(first - failed.begin());
  std::string msg = mine;
  if (from != 0) {  // its text to rank 0
    uint64_t len = msg.size();
    if (comm.rank() == from) comm.send(0, &len, sizeof len, kTagDriver), comm.send(0, msg.data(), len, kTagDriver);
    if (comm.rank() == 0) {
      comm.recv(from, &len, sizeof len, kTagDriver);
      msg.assign(len, '\0');
      comm.recv(from, msg.data(), len, kTagDriver);
    }
  }
  if (comm.rank() == 0) {
    const bool all = std::count(failed.begin(), failed.end(), uint64_t{1}) == static_cast<long>(failed.size());
    std::fprintf(stderr, "dtbench: error: %s%s\n",
                 all ? "" : ("rank " + std::to_string(from) + " of " + std::to_string(comm.size()) + ": ").c_str(),
                 msg.c_str());
    std::fflush(stderr);
  }
  comm.barrier();  // rank 0 has printed before any rank leaves (mpirun would kill it)
  throw ExitRequest(static_cast<int>(ExitCode::bad_input));
}

// The ranks of a launcher agree on an error found before MPI started (agree_on_early_error): under MPI, and under a
// launcher of several ranks whatever the transport (a misspelt one, or "thread", which a launcher may not start).
bool agrees_on_early_errors(const std::string& transport) {
  return transport == "mpi" || launched_ranks() >= 2;
}

void run_command(const CliOptions& cli) {
  const bool agree = agrees_on_early_errors(cli.transport);
  AllreduceOptions o;
  std::string early;  // the error found before MPI started, which the ranks agree on
  try {
    o = checked_options(cli);
  } catch (const BadInput& e) {
    if (!agree) throw;
    early = e.what();
  }

  Json result;
  bool rank0 = true;
  if (agree) {  // past the agreement, the transport is "mpi"
    std::optional<EarlyErrorWatchdog> watchdog;
    if (!early.empty()) watchdog.emplace(early);
    MpiSession session("allreduce");
    MpiComm comm;
    rank0 = comm.rank() == 0;
    agree_on_early_error(comm, early, watchdog);
    const std::vector<int> nodes = comm.nodes();
    if (std::any_of(nodes.begin(), nodes.end(), [&](int n) { return n != nodes[0]; }))
      o.reducers = resolve_reducers(cli.reducer, true, false);  // "all" without shared_memory
    // Every rank must run the same sweep (mpirun's MPMD form can start them with other options): ranks that differ
    // would wait for each other's messages forever.
    // --json too: rank 0 writes it, so another rank's own file was ignored without a word (found by a hunt).
    Json sweep = options_json(o, cli);
    sweep["json"] = cli.json;
    const std::string mine = sweep.dump();
    const std::vector<uint64_t> hashes = gather_to_all(comm, static_cast<uint64_t>(std::hash<std::string>{}(mine)));
    // From here every rank has the same options, so an error is every rank's: rank 0 alone prints it, and the ranks
    // leave together (one that exited first would have mpirun kill rank 0 before it printed).
    try {
      for (size_t r = 1; r < hashes.size(); ++r)
        if (hashes[r] != hashes[0])
          throw SameOnAllRanks(ExitCode::bad_input, "rank " + std::to_string(r) + " was started with other options than "
                               "rank 0: every rank must run the same allreduce sweep");
      if (const std::string e = layout_error(o, comm.size(), nodes); !e.empty()) throw SameOnAllRanks(ExitCode::bad_input, e);
      // A GPU reducer (nccl) where a rank has no usable device: one verdict, said once (each rank said its own), and
      // before any reducer is built (building nccl is collective: a rank failing alone would leave the others waiting).
      for (const std::string& name : o.reducers)
        if (const ReducerInfo* info = find_reducer(name); info && info->kind == ReducerKind::kGpuOnly) {
          const CudaDevices d = cuda_devices();
          const std::vector<uint64_t> lacking =
              gather_to_all(comm, static_cast<uint64_t>(d.state != CudaDevices::State::usable));
          const auto first = std::find(lacking.begin(), lacking.end(), uint64_t{1});
          if (first != lacking.end())
            throw SameOnAllRanks(ExitCode::bad_input,
                                 "reducer " + name + ": " +
                                     (lacking[0] ? "no CUDA device: " + d.reason
                                                 : "rank " + std::to_string(first - lacking.begin()) +
                                                       " has no usable CUDA device"));
          break;
        }
      // The memory of this node, shared by its ranks; one verdict for all (a rank alone failing would leave the
      // others waiting).
      const int here = static_cast<int>(std::count(nodes.begin(), nodes.end(), nodes[size_t(comm.rank())]));
      std::string too_much;
      try {
        check_memory(o, cli.maxbytes, here);
      } catch (const BadInput& e) {
        too_much = e.what();
      }
      if (max_over_ranks(comm, too_much.empty() ? 0.0 : 1.0) > 0)
        throw SameOnAllRanks(ExitCode::bad_input, !too_much.empty() ? too_much
                                                                    : "-e/--maxbytes: the buffers would not fit in "
                                                                      "another node's memory");
      // Rank 0 writes the JSON: it checks the path before the sweep, and every rank stops with the same error
      // if it fails.
      std::string unwritable;
      if (rank0 && !cli.json.empty()) {
        try {
          check_output_file(cli.json, "--json");
        } catch (const BadInput& e) {
          unwritable = e.what();
        }
      }
      if (max_over_ranks(comm, unwritable.empty() ? 0.0 : 1.0) > 0)
        throw SameOnAllRanks(ExitCode::bad_input, rank0 ? unwritable : "--json: rank 0 cannot write '" + cli.json + "'");
    } catch (const SameOnAllRanks& e) {
      if (rank0) std::fprintf(stderr, "dtbench: error: %s\n", e.what());
      std::fflush(stderr);
      comm.barrier();
      throw ExitRequest(static_cast<int>(e.code()));
    }
    result = run_allreduce_sweep(comm, o, rank0 ? &std::cout : nullptr);
    comm.barrier();
  } else {
    if (const std::string e = layout_error(o, cli.ranks); !e.empty()) throw BadInput(e);
    if (!cli.json.empty()) check_output_file(cli.json, "--json");
    run_ranks(cli.ranks, [&](Comm& comm) {
      Json r = run_allreduce_sweep(comm, o, comm.rank() == 0 ? &std::cout : nullptr);
      if (comm.rank() == 0) result = std::move(r);
    });
  }
  const uint64_t wrong = result["wrong"].is_null() ? 0 : result["wrong"].get<uint64_t>();
  if (rank0 && !cli.json.empty()) {
    Json doc = {{"kind", "dtbench.allreduce"}, {"version", 1}, {"options", options_json(o, cli)}};
    for (auto it = result.begin(); it != result.end(); ++it) doc[it.key()] = it.value();
    doc["provenance"] = provenance();
    write_json_atomic(cli.json, doc, false);
  }
  if (wrong > 0) throw RunFailed("allreduce: " + std::to_string(wrong) + " wrong elements (see #wrong)");
}

}  // namespace

namespace {

// The subcommand; with run false its callback does nothing (check_allreduce_args), but it still owns the options the
// parser writes into, which it returns.
std::shared_ptr<CliOptions> add_allreduce_subcommand(CLI::App& app, bool run) {
  auto cli = std::make_shared<CliOptions>();
  auto* cmd = app.add_subcommand("allreduce", "Sweep the reducers over message sizes (nccl-tests style)");
  cmd->add_option("-b,--minbytes", cli->minbytes, "Smallest size in bytes (K/M/G suffixes); sizes are rounded down to whole floats (4 bytes)")->capture_default_str();
  cmd->add_option("-e,--maxbytes", cli->maxbytes, "Largest size in bytes (K/M/G suffixes)")->capture_default_str();
  cmd->add_option("-f,--stepfactor", cli->stepfactor, "Multiply the size by this factor (> 1)")
      ->capture_default_str();
  cmd->add_option("-n,--iters", cli->iters, "Timed iterations per size")->capture_default_str();
  cmd->add_option("-w,--warmup_iters", cli->warmup, "Warm-up iterations per size")->capture_default_str();
  cmd->add_option("-c,--check", cli->check, "Checked iterations per size (outside the timed loop)")
      ->capture_default_str();
  cmd->add_option("--reducer", cli->reducer, "Reducer name, comma-separated names, or all")->capture_default_str();
  CLI::Option* servers =
      cmd->add_option("--servers", cli->servers, "parameter_server: number of server shards")->capture_default_str();
  CLI::Option* leader =
      cmd->add_option("--leader", cli->leader, "hierarchical: the algorithm the node leaders run")->capture_default_str();
  CLI::Option* ranks_per_node =
      cmd->add_option("--ranks-per-node", cli->ranks_per_node,
                      "hierarchical: emulate nodes of this many consecutive ranks (0: the launcher's nodes)")
          ->capture_default_str();
  cmd->add_option("--segment-bytes", cli->segment, "ring, butterfly, halving_doubling: segment size (rounded down to whole floats)")
      ->capture_default_str();
  cmd->add_option("--small-segment-bytes", cli->small_segment, "Segment size of small transfers (eager messages; rounded down to whole floats)")
      ->capture_default_str();
  cmd->add_option("--small-transfer-bytes", cli->small_transfer,
                  "Transfers up to this size use --small-segment-bytes (0: never)")
      ->capture_default_str();
  cmd->add_flag("--async", cli->async, "Time start()+wait() on the communication thread");
  CLI::Option* json = cmd->add_option("--json", cli->json, "Write the rows and provenance to this JSON file");
  cmd->add_option("--transport", cli->transport, "mpi (under mpirun) or thread (ranks as threads, no MPI)")
      ->capture_default_str();
  CLI::Option* ranks = cmd->add_option("--ranks", cli->ranks, "Rank count for --transport thread")->capture_default_str();
  cmd->callback([cli, ranks, json, servers, leader, ranks_per_node, run] {
    cli->ranks_given = ranks->count() > 0, cli->json_given = json->count() > 0;
    cli->servers_given = servers->count() > 0, cli->leader_given = leader->count() > 0;
    cli->ranks_per_node_given = ranks_per_node->count() > 0;
    if (!run) return;
    run_command(*cli);
  });
  return cli;
}

}  // namespace

void add_allreduce_command(CLI::App& app) { add_allreduce_subcommand(app, true); }

bool say_allreduce_parse_error_once(const std::string& why) {
  if (launched_ranks() < 2) return false;
  std::optional<EarlyErrorWatchdog> watchdog(std::in_place, why);
  try {
    MpiSession session("allreduce");
    MpiComm comm;
    agree_on_early_error(comm, why, watchdog);
  } catch (const ExitRequest&) {
    return true;  // rank 0 printed it
  } catch (const Error&) {
    // MPI would not start: the caller prints it
  }
  return false;
}

AllreduceOptions check_allreduce_args(const std::vector<std::string>& args, const std::string& transport, int ranks,
                                      bool on_this_machine) {
  CLI::App app;
  const std::shared_ptr<CliOptions> cli = add_allreduce_subcommand(app, false);
  cli::apply_rules(app);  // as dtbench's own command line
  std::vector<std::string> argv(args.rbegin(), args.rend());  // CLI11 takes them last first
  argv.push_back("allreduce");
  app.parse(argv);
  // And their values, as the run will check them (sizes, reducers; memory of `ranks` ranks on this machine).
  cli->transport = transport;
  cli->ranks = ranks;
  AllreduceOptions o = checked_options(*cli, on_this_machine);
  if (const std::string e = layout_error(o, ranks); !e.empty()) throw BadInput(e);
  return o;
}

}  // namespace dtbench
