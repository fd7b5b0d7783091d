// Claim h: the seeds' ImageNet ResNet-50 table regenerated from data (results/published, copied into the claim's
// folder when it ran), with the optimizer column the seed gives. The check that can fail: the seed's own figures
// must agree with each other, steps x time per step = time to train, within `max_inconsistency` (relative), for
// every row that gives all three; and every such row names its optimizer. Supported: all agree. Contradicted: some
// row disagrees or lacks its optimizer.
#include <algorithm>
#include <cmath>

#include "analysis/published.hpp"
#include "core/published_dir.hpp"
#include "reproduce/criteria/kinds.hpp"
#include "reproduce/evidence.hpp"

namespace dtbench::reproduce {
namespace published_table_criterion {

void check(const Json& c, const std::string& where) {
  check_keys(c, where, {"table", "max_inconsistency", "inputs"});
  number_in(c, where, "max_inconsistency", 0, 1);
  for (const char* k : {"table", "inputs"}) text_in(c, where, k);
}

// The table is one of the files the inputs experiment copies, and a published table (read from results/published, as
// the copy will be: a damaged one was found only after the copy and reproduce.json were written).
void check_experiments(const Json& c, const std::vector<Experiment>& experiments, const std::string& where) {
  const std::string table = c["table"].get<std::string>() + ".json";
  const Experiment& e = published_inputs(c, experiments, where, {});
  if (std::find(e.files.begin(), e.files.end(), table) == e.files.end())
    throw BadInput(where + "/table: experiment \"" + e.name + "\" does not copy " + table);
  analysis::load_published((published_dir() / table).string());
}

Finding evaluate(const Claim&, const Json& c, const std::vector<Experiment>&, const std::filesystem::path& out) {
  Finding f;
  const auto file = out / c["inputs"].get<std::string>() / (c["table"].get<std::string>() + ".json");
  if (!std::filesystem::exists(file)) {
    f.reason = "the published table was not copied (experiment \"" + c["inputs"].get<std::string>() + "\" not run)";
    return f;
  }
  const Json doc = analysis::load_published(file.string());
  const double tol = c["max_inconsistency"].get<double>();
  std::vector<std::vector<std::string>> rows;
  std::string bad;
  for (size_t i = 0; i < doc["rows"].size(); ++i) {
    const Json& r = doc["rows"][i];
    // A row that gives only its time to train is not one this check reads; one that gives steps or a time per step
    // must give all three (a row without its minutes was left out of "all rows agree", found by a hunt).
    const auto given = [&](const char* key) { return r.contains(key) && !r[key].is_null(); };
    if (!given("steps") && !given("seconds_per_step")) continue;
    // The table's reader takes any cell (a table may print text); the figures compared here must be numbers, and
    // below a bound no published figure reaches (1e300 steps printed "inf" as the product, found by a hunt).
    const auto cell_must = [&](const char* key, bool number) {
      const Json& v = r.contains(key) ? r[key] : Json();
      if (number ? !(v.is_number() && v.get<double>() > 0 && v.get<double>() <= 1e12) : !v.is_string())
        throw BadInput(file.string() + ": /rows/" + std::to_string(i) + "/" + key + ": expected " +
                       (number ? "a number in (0, 1e12]" : "a text") + " (steps, seconds_per_step and minutes go "
                       "together), got " + (!given(key) ? std::string("nothing") : v.dump().substr(0, 40)));
    };
    for (const char* key : {"steps", "seconds_per_step", "minutes"}) cell_must(key, true);
    cell_must("work", false);
    const double product = r["steps"].get<double>() * r["seconds_per_step"].get<double>() / 60;
    const double published = r["minutes"].get<double>();
    const double err = (product - published) / published;
    const bool has_optimizer = r.contains("optimizer") && r["optimizer"].is_string() &&
                               r["optimizer"].get<std::string>().find_first_not_of(" \t") != std::string::npos;
    const bool ok = within(err, tol) && has_optimizer;
    if (!ok) bad += (bad.empty() ? "" : ", ") + r["work"].get<std::string>();
    rows.push_back({r["work"].get<std::string>(),
                    has_optimizer ? analysis::md_text(r["optimizer"].get<std::string>()) : "**missing**",
                    fixed(product, 2), fixed(published, 2), fixed(100 * err, 1) + "%", ok ? "yes" : "**no**"});
  }
  f.numbers = analysis::render(analysis::published_table(doc, analysis::Format::md), analysis::Format::md) +
              "\nConsistency of the seed's figures:\n\n" +
              md_table({"work", "optimizer", "steps x time/step (min)", "time (min)", "difference",
                        "within " + analysis::format_number(100 * tol) + "% and optimizer given"}, rows, {1, 5});
  if (rows.empty()) {
    f.reason = "no row gives steps, time per step and time together";
    return f;
  }
  f.verdict = bad.empty() ? Verdict::supported : Verdict::contradicted;
  f.reason = bad.empty() ? "all " + std::to_string(rows.size()) + " rows with steps and time per step agree with "
                               "their time to train within " + analysis::format_number(100 * tol) + "% and name their optimizer."
                         : "disagreeing or without an optimizer: " + bad + ".";
  return f;
}

}  // namespace published_table_criterion

const CriterionKind kPublishedTable = {"published_table", published_table_criterion::check,
                                       published_table_criterion::evaluate, published_table_criterion::check_experiments};

}  // namespace dtbench::reproduce
