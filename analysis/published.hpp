// Published results as data (results/published/NAME.json), printed in the same formats as
// campaign tables so the seeds' tables are regenerated from data rather than copied as text.
//
//   {
//     "kind": "dtbench-published-table",
//     "title": "...", "description": "...",
//     "columns": [{"key": "batch", "label": "Batch size"},
//                 {"key": "epochs", "label": "Mean epochs", "stat": "mean", "digits": 1}, ...],
//     "rows": [{"batch": 1632, "epochs": [34, 35, ...], "refs": ["mlperf-rcp"]}, ...],
//     "references": {"mlperf-rcp": "full citation with URL"},
//     "notes": ["..."]
//   }
//
// A column with "stat" (mean, min, max, count) summarises a list-valued cell; "digits" fixes the
// decimals of numbers.
// Rows' "refs" become a "Source" column pointing into the numbered reference list.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "analysis/text_table.hpp"
#include "core/json.hpp"

namespace dtbench::analysis {

// Names of the tables there (file stems of the files whose kind is "dtbench-published-table").
std::vector<std::string> published_names();

// Loads a table by name ("imagenet-resnet50") or path. BadInput naming the known tables otherwise.
Json load_published(const std::string& name_or_path);
// The file load_published reads for that name or path.
std::filesystem::path published_file(const std::string& name_or_path);

// Validates a published table document; BadInput with a JSON pointer.
void check_published(const Json& doc);

// The table for `format`: integers print with thousands separators ("8,192", like the seeds'
// tables) except in CSV.
TextTable published_table(const Json& doc, Format format);

}  // namespace dtbench::analysis
