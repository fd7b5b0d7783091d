// `dtbench reproduce [CLAIM ...] --out DIR [--local | --submit [--wait] | --dry-run] [--scale quick|full]
// [--report-only] [--claims FOLDER]`: runs the experiments of the seeds' claims (results/claims/<id>/) and writes
// the report with a verdict per claim (reproduce/report.hpp). Exit 0 when every experiment finished (whatever the
// verdicts), 1 when some run did not (its claim is inconclusive and says which), 2 for bad input (an unknown claim
// lists the valid ones; a claim whose definition changed since its runs started in DIR).
#pragma once

namespace CLI {
class App;
}

namespace dtbench {
void add_reproduce_command(CLI::App& app);
}  // namespace dtbench
