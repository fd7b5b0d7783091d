// `dtbench table DIR [--format md|csv|latex] [--group-by KEYS] [--metrics LIST]` and
// `dtbench table --published NAME`: result tables regenerated from run records and from published
// data (analysis/campaign_table.hpp, analysis/published.hpp).
#pragma once

namespace CLI {
class App;
}

namespace dtbench {
void add_table_command(CLI::App& app);
}  // namespace dtbench
