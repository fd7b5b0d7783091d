// The result table of a campaign: one row per sweep point (or per group of points with
// --group-by), with median [min, max] over the repeats of each metric, and a "runs" column that
// says how many repeats are done and which are failed, preempted or missing. A point without any
// record is a row too: nothing is dropped silently.
//
// Metrics (per run, from its record):
//   throughput          /throughput/images_per_second                         images/s
//   steady_throughput   /throughput/steady_images_per_second                  images/s
//                       (the same without each attempt's first step)
//   time_to_accuracy    /time_to_accuracy/seconds when reached                 s
//   epochs_to_target    /time_to_accuracy/epoch when reached                   epochs
//   steps_to_target     /time_to_accuracy/step when reached                    steps
//   final_accuracy      last /curve entry's test_accuracy, 0 for a diverged run  %
//   scaling_efficiency  /extra/scaling_efficiency when the record has it, else (X_K / K) / (X_K0 / K0)
//                       with X the median throughput and K0 the smallest rank count among rows
//                       that agree on every other key (a key zipped with the rank count moves with it when
//                       it has one value per rank count)
//   exposed_comm        /timing/exposed_comm / /timing/total: share of a step spent waiting on
//                       gradient communication                                 %
//   b_simple            last non-null /curve entry's b_simple (McCandlish et al. 2018)  samples
//   wall_seconds        /wall_seconds                                          s
// Runs whose status is completed, reached-target or diverged count; failed, preempted, missing and
// unreadable runs appear only in the "runs" column, and each unreadable record's reason in the notes.
#pragma once

#include <string>
#include <vector>

#include "analysis/campaign_data.hpp"
#include "analysis/text_table.hpp"

namespace dtbench::analysis {

struct TableOptions {
  std::vector<std::string> group_by;  // empty: the campaign's axis keys
  std::vector<std::string> metrics;   // empty: default_metrics()
};

const std::vector<std::string>& all_metrics();
const std::vector<std::string>& default_metrics();

// The table in the layout of `format`: md and latex put "median [min, max]" in one cell; csv has
// separate _median, _min, _max and _n columns. Throws BadInput for an unknown metric.
TextTable campaign_table(const CampaignData& c, const TableOptions& o, Format format);

}  // namespace dtbench::analysis
