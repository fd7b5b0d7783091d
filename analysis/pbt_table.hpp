// `dtbench table DIR` on a population-based training campaign (DIR/lineage.json, core/pbt_lineage.hpp): every
// member's accuracy at the last ready point with its hyperparameters, and the best member's hyperparameter
// schedule, following its ancestry (whose checkpoint it continued at each ready point).
#pragma once

#include <vector>

#include "analysis/text_table.hpp"
#include "core/pbt_lineage.hpp"

namespace dtbench::analysis {

std::vector<TextTable> pbt_tables(const pbt::Lineage& lineage, Format f);

}  // namespace dtbench::analysis
