// A table as text in three formats: Markdown (GitHub pipes), CSV (RFC 4180) and LaTeX (booktabs).
// Cells are plain strings; each format escapes what it must.
#pragma once

#include <string>
#include <vector>

#include "core/json.hpp"

namespace dtbench::analysis {

enum class Format { md, csv, latex };

// "md", "csv" or "latex"; BadInput otherwise.
Format parse_format(const std::string& name);

struct TextTable {
  std::string caption;                      // md: a line above; latex: \caption; csv: left out
  std::vector<std::string> header;
  std::vector<bool> right;                  // right-align this column (numbers)
  std::vector<bool> markdown;               // md: this column's cells are Markdown that dtbench wrote (a failed
                                            // check in bold), written as they are; every other cell is escaped
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;           // md and latex: lines below (references, definitions)
};

std::string render(const TextTable& t, Format f);

// Text as literal Markdown, the escaping render() gives a cell (line_start: as it gives a caption or a note, text at
// the start of a line): for a caller that puts text beside its own markup.
std::string md_text(const std::string& s, bool line_start = false);

// Numbers for tables: 4 significant digits, plain notation up to 10^7.
std::string format_number(double v);
// The shortest text that reads back as v exactly (CSV cells, which programs read); nan and inf as format_number.
std::string exact_number(double v);
// `v` with `digits` decimals ("%.*f"), whole however long (a 64-byte buffer cut 1e100 to 63 digits, a figure off by
// 37 orders of magnitude: found by a hunt).
std::string fixed_text(double v, int digits);

// A config value as a cell: "-" for null, a string as is (quoted when it reads as another value: "0"), a float by format_number, a section given whole by its
// name and keys ("sgd lr=0.1 momentum=0.9"), anything else as JSON.
std::string json_cell(const Json& v);
// The same for a key cell, which names its row: a float as short as it reads back exactly (0.99999, not "1").
std::string key_cell(const Json& v);

}  // namespace dtbench::analysis
