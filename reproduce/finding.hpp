// What a criterion finds in a claim's records: the verdict, its reason, the numbers behind it and the data of the
// claim's figure. Verdicts are never silent passes: a criterion that lacks a run it needs says "inconclusive" and
// names the missing or failed runs.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "reproduce/claim.hpp"

namespace dtbench::reproduce {

enum class Verdict { supported, contradicted, inconclusive };
std::string to_string(Verdict v);

struct Finding {
  Verdict verdict = Verdict::inconclusive;
  std::string reason;    // one or two sentences: why this verdict
  std::string numbers;   // Markdown (tables) with the figures the verdict rests on
  Json figure;           // data for analysis/plot.py's claims figures ({"kind": ..., ...}), or null for none
};

// A criterion kind: checks its parameters when the claim is loaded, and evaluates the claim's records.
// `out` is the claim's folder in the report folder: experiment e's output is out / e.name.
struct CriterionKind {
  const char* name;
  void (*check)(const Json& criterion, const std::string& where);
  Finding (*evaluate)(const Claim& claim, const Json& criterion, const std::vector<Experiment>& experiments,
                      const std::filesystem::path& out);
  // What the parameters name among a scale's experiments (and the files they copy), checked when the claim is
  // loaded; null for a kind whose parameters name none.
  void (*check_experiments)(const Json& criterion, const std::vector<Experiment>& experiments,
                            const std::string& where) = nullptr;
};

// The kind named `name`; BadInput listing the kinds otherwise.
const CriterionKind& criterion_kind(const std::string& name, const std::string& where);

}  // namespace dtbench::reproduce
