// The sweep-spec reader as `dtbench sweep SPEC --dry-run` runs it: the spec's text through the strict JSON
// parser, validation of every section, the grid's expansion (every point's run config resolved with the
// config rules), the sbatch and job-array scripts and the campaign index it would write.
// Input: the spec's text. A base config named by a file is looked for in an empty scratch folder (so it is
// missing, unless the name is absolute: only read, never written).
#include <algorithm>

#include "fuzz/fuzz_input.hpp"
#include "slurm/campaign.hpp"
#include "slurm/expand.hpp"
#include "slurm/sbatch_script.hpp"
#include "slurm/spec.hpp"

using namespace dtbench;
using namespace dtbench::slurm;

namespace {
// Every run's config is resolved and scripted: grids above this many runs are validated but not expanded, so
// that one input takes milliseconds (the grid limits themselves are tests/slurm's).
constexpr size_t kMaxFuzzedRuns = 64;

size_t runs_of(const Spec& spec) {
  size_t runs = std::min(static_cast<size_t>(spec.repeats), kMaxFuzzedRuns + 1);
  for (const Axis& a : spec.axes) runs = std::min(runs * std::min(a.size(), kMaxFuzzedRuns + 1), kMaxFuzzedRuns + 1);
  return runs;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::bad_input_is_fine([&] {
    const Spec spec = parse_spec(parse_json(text, "spec.json"), fuzz::scratch());
    if (runs_of(spec) > kMaxFuzzedRuns) return;
    const Layout l = make_layout(fuzz::scratch() / "campaign",
                                 spec.program.empty() ? std::vector<std::string>{"/usr/bin/dtbench", "train"}
                                                      : spec.program,
                                 "dtbench (fuzz)");
    const std::vector<Point> points = expand(spec, l.runs);
    for (const Point& p : points)
      for (const Run& r : p.runs) (void)run_script(spec, p, r, l);
    const std::vector<ArrayGroup> groups = array_groups(points);
    for (size_t g = 0; g < groups.size(); ++g) (void)array_script(spec, groups[g], g, l);
    (void)campaign_index(spec, points, l, false).to_json().dump();
  });
  return 0;
}
