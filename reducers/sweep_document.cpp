#include "reducers/sweep_document.hpp"

#include <cmath>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "reducers/allreduce_bench.hpp"

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

// A measured time in microseconds: the median where the row has it, and the mean.
void check_times(const JsonFields& row) {
  row.nonneg_number("time_us");
  if (row.has("time_median_us")) row.nonneg_number("time_median_us");
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
  count_in(top, "ranks", 1, kMaxCount);
  if (top.has("provenance") && top.fields("provenance").has("cpu")) {
    const JsonFields cpu = top.fields("provenance").fields("cpu");
    if (cpu.has("logical_cores")) count_in(cpu, "logical_cores", 0, kMaxCount);
  }
  for (const JsonFields& row : top.items("rows")) {
    count_in(row, "bytes", 0, kMaxSize);
    row.string("reducer");
    count_in(row, "wrong", 0, 9007199254740992.0);  // 2^53: exact as a double
    check_times(row);
  }
  for (const JsonFields& row : top.items("reduction")) {
    count_in(row, "bytes", 0, kMaxSize);
    check_times(row);
  }
}

}  // namespace dtbench
