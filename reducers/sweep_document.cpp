#include "reducers/sweep_document.hpp"

#include <algorithm>
#include <cmath>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "reducers/allreduce_bench.hpp"
#include "reducers/comm.hpp"
#include "reducers/hierarchical.hpp"
#include "reducers/registry.hpp"

namespace dtbench {
namespace {

constexpr double kMaxSize = static_cast<double>(kMaxBytes);
constexpr double kMaxCount = 1 << 24;  // ranks, servers and cores, as `model --ranks` takes them

// A count or a byte size: a whole number in [lo, hi] (written as an integer by `dtbench allreduce`; a whole
// double such as 4096.0 is the same count).
void count_in(const JsonFields& f, const std::string& key, double lo, double hi) {
  const double v = f.number(key);
  if (std::floor(v) != v || v < lo || v > hi)
    throw_wrong_type(f.pointer(key), "an integer in [" + config::fmt_number(lo) + ", " + config::fmt_number(hi) + "]",
                     f.at(key));
}

// A measured time in microseconds: the median where the row has it, and the mean. 0 (nothing timed) or from a
// nanosecond to 10^12 us (11 days): a time outside that is no measurement, and a fit weighted by 1/t^2 would lose
// its rows to overflow without a word.
void check_times(const JsonFields& row) {
  for (const char* key : {"time_us", "time_median_us"}) {
    if (std::string(key) == "time_median_us" && !row.has(key)) continue;
    const double t = row.nonneg_number(key);
    if (t != 0 && (t < 1e-3 || t > 1e12))
      throw_wrong_type(row.pointer(key), "0 or a time in [0.001, 1e12] microseconds", row.at(key));
  }
}

}  // namespace

void check_sweep_document(const Json& doc) {
  const JsonFields top(doc, "");
  if (!top.has("kind") || top.at("kind") != "dtbench.allreduce")
    throw BadInput("not a `dtbench allreduce --json` file (\"kind\" is not \"dtbench.allreduce\")");
  const JsonFields options = top.fields("options");
  count_in(options, "segment_bytes", 4, kMaxSize);
  if (options.has("small_segment_bytes")) count_in(options, "small_segment_bytes", 4, kMaxSize);
  if (options.has("small_transfer_bytes")) count_in(options, "small_transfer_bytes", 0, kMaxSize);
  count_in(options, "servers", 1, kMaxCount);
  if (options.has("check_iters")) count_in(options, "check_iters", 0, kMaxCount);
  const bool checked = !options.has("check_iters") || options.number("check_iters") > 0;
  // The leader is the hierarchical rows' (`dtbench allreduce` checks --leader only when it sweeps hierarchical).
  if (options.has("leader")) {
    const std::string leader = options.string("leader");
    try {
      if (has_hierarchical_rows(doc)) Hierarchical::check_leader(leader);
    } catch (const BadInput& e) {
      throw BadInput(options.pointer("leader") + ": " + e.what());
    }
  }
  if (options.has("ranks_per_node")) count_in(options, "ranks_per_node", 0, kMaxCount);
  if (top.has("version") && top.at("version") != 1)
    throw BadInput(top.pointer("version") + ": expected 1, got " + top.at("version").dump() + " (a later dtbench's format)");
  count_in(top, "ranks", 1, kMaxCount);
  // As `dtbench allreduce` refuses them (a fit took 7 servers of 3 ranks as 3 without a word; a hunt).
  if (options.number("servers") > top.number("ranks"))
    throw BadInput(options.pointer("servers") + ": " + options.at("servers").dump() + " servers, more than the " +
                   top.at("ranks").dump() + " ranks of the sweep");
  // The launcher's node of each rank (the hierarchical rows' layout): one entry per rank, each in [0, ranks), the
  // nodes numbered as Comm::nodes() numbers them, in the order of each node's lowest rank (nodes [1, 1, 1] were a
  // division by zero in the cost model's reading of the layout; a hunt).
  if (top.has("nodes")) {
    const Json& nodes = top.array("nodes");
    const double ranks = top.number("ranks");
    if (static_cast<double>(nodes.size()) != ranks)
      throw BadInput(top.pointer("nodes") + ": expected one entry per rank (" + config::fmt_number(ranks) + "), got " +
                     std::to_string(nodes.size()));
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Json& n = nodes[i];
      if (!n.is_number() || std::floor(n.get<double>()) != n.get<double>() || n.get<double>() < 0 ||
          n.get<double>() >= ranks)
        throw_wrong_type(top.pointer("nodes") + "/" + std::to_string(i),
                         "an integer in [0, " + config::fmt_number(ranks - 1) + "]", n);
    }
    std::vector<int64_t> layout;
    for (const Json& n : nodes) layout.push_back(static_cast<int64_t>(n.get<double>()));
    if (const auto bad = misnumbered_node(layout))
      throw BadInput(top.pointer("nodes") + "/" + std::to_string(bad->rank) + ": node " +
                     std::to_string(layout[bad->rank]) + ", where a new node here is " + std::to_string(bad->next) +
                     " (nodes are numbered from 0 in the order of their lowest rank)");
  }
  if (top.has("provenance") && top.fields("provenance").has("cpu")) {
    const JsonFields cpu = top.fields("provenance").fields("cpu");
    if (cpu.has("logical_cores")) count_in(cpu, "logical_cores", 0, kMaxCount);
  }
  for (const JsonFields& row : top.items("rows")) {
    count_in(row, "bytes", 0, kMaxSize);
    if (row.has("ranks") && row.at("ranks") != top.at("ranks"))
      throw BadInput(row.pointer("ranks") + ": " + row.at("ranks").dump() + ", but the file's /ranks is " +
                     top.at("ranks").dump());
    // A reducer dtbench has (one without a cost formula, nccl, is left out of fits by name; an unknown one is another
    // writer's, and was dropped from a fit without a word).
    if (const std::string name = row.string("reducer"); find_reducer(name) == nullptr)
      throw BadInput(row.pointer("reducer") + ": " + config::shown(row.at("reducer")) + " is not a dtbench reducer");
    // null: nothing checked (-c 0), which only a sweep with check_iters 0 may say.
    if (checked || !row.has("wrong") || !row.at("wrong").is_null())
      count_in(row, "wrong", 0, 9007199254740992.0);  // 2^53: exact as a double
    check_times(row);
  }
  for (const JsonFields& row : top.items("reduction")) {
    count_in(row, "bytes", 0, kMaxSize);
    check_times(row);
  }
}

ReducerOptions sweep_options(const Json& doc) {
  const Json& opt = doc["options"];
  ReducerOptions o;
  // Whole floats, as they ran: a sweep written before allreduce rounded its options (segment_bytes 6) ran with 4, and
  // would not match a newer one's 4.
  o.segment_bytes = whole_float_bytes(opt["segment_bytes"].get<size_t>());
  o.small_segment_bytes = whole_float_bytes(opt.value("small_segment_bytes", o.small_segment_bytes));
  o.small_transfer_bytes = opt.value("small_transfer_bytes", o.small_transfer_bytes);
  o.servers = opt["servers"].get<int>();
  return o;
}

bool has_hierarchical_rows(const Json& doc) {
  if (!doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array()) return false;
  return std::any_of(doc["rows"].begin(), doc["rows"].end(), [](const Json& r) {
    return r.is_object() && r.contains("reducer") && r["reducer"] == "hierarchical";
  });
}

}  // namespace dtbench
