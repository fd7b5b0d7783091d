// The reproduction report of a report folder (what `dtbench reproduce --out DIR` writes):
//
//   DIR/reproduce.json   the scale, the claims, and each session that ran experiments here (machine, load, times)
//   DIR/<id>/            the claim's definition as it was when its runs started (claim.json and its specs: the
//                        criteria are fixed there before any run) and one folder per experiment
//   DIR/REPORT.md        per claim: the seed's statement, the setup, the criterion, the numbers and the verdict
//   DIR/report.json      the same verdicts and each claim's figure data (analysis/plot.py claims DIR draws them)
//
// The report is a function of the folder's files alone: `dtbench reproduce --report-only --out DIR` regenerates
// REPORT.md and report.json byte for byte.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "reproduce/finding.hpp"

namespace dtbench::reproduce {

struct ClaimVerdict {
  std::string id, title;
  Finding finding;
};

// DIR/reproduce.json, checked whole (exit 2 naming the file and the pointer): an object with "kind"
// "dtbench-reproduction", "scale" quick or full, "claims" a list of claim ids (plain folder names), "sessions" a
// list of objects whose fields are texts, and "definitions" (absent in folders from before it): per claim id, the
// CRC-32 of each file of its definition (claim.json and its specs) as its runs started from it.
Json read_index(const std::filesystem::path& dir);

// The files of a claim's folder (claim.json, its specs, their base configs), name -> contents; none where the
// folder cannot be listed.
std::map<std::string, std::string> definition_files(const std::filesystem::path& dir);
// The "definitions" entry of a claim whose files (name -> text) are copied into DIR before its runs.
Json definition_digests(const std::map<std::string, std::string>& files);
// The first file whose digest differs between two such entries, or that one of them lacks; "" when they agree.
std::string first_digest_difference(const Json& now, const Json& recorded);

// Evaluates every claim of DIR/reproduce.json and writes REPORT.md and report.json (atomically). Returns the
// verdicts in the order of the claims. A claim's file in DIR that is not what its recorded definition says (edited
// after the runs: criteria are fixed before them), or a definition file without a recorded digest, is BadInput
// naming the file, before anything is written.
std::vector<ClaimVerdict> write_report(const std::filesystem::path& dir);

// What write_report reads, read and judged, writing nothing: the claims of DIR/reproduce.json but those in `except`
// (which the caller checks itself). Throws what write_report would throw. `dtbench reproduce` calls it before it
// writes, so that a damaged claim it does not run is refused before the run rather than after it.
void check_report_inputs(const std::filesystem::path& dir, const std::set<std::string>& except);

// The verdict table printed at the end of a run: claim, title, verdict, reason.
std::string verdict_table(const std::vector<ClaimVerdict>& v);

}  // namespace dtbench::reproduce
