#include "analysis/pbt_table.hpp"

#include <string>

namespace dtbench::analysis {

namespace {

std::vector<std::string> keys_of(const pbt::Lineage& l) {
  std::vector<std::string> keys;
  if (!l.intervals.empty())
    for (auto it = l.intervals[0].members[0].hyperparameters.begin(); it != l.intervals[0].members[0].hyperparameters.end(); ++it)
      keys.push_back(it.key());
  return keys;
}

}  // namespace

std::vector<TextTable> pbt_tables(const pbt::Lineage& l, Format) {
  std::vector<TextTable> out;
  const std::vector<std::string> keys = keys_of(l);
  if (l.intervals.empty()) return out;
  const pbt::Interval& last = l.intervals.back();

  TextTable members;
  members.caption = l.name + ": " + (l.mode == "pbt" ? "population-based training" : "random search") + ", " +
                    std::to_string(l.population) + " members, ready every " + std::to_string(l.ready_steps) +
                    " steps, " + std::to_string(last.end_step) + " of " + std::to_string(l.total_steps) + " steps";
  members.header = {"member", "test accuracy", "exploited", "failed"};
  members.right = {true, true, true, true};
  const bool validated = l.select_on == "validation";
  if (validated) members.header.insert(members.header.begin() + 2, "validation accuracy"), members.right.push_back(true);
  for (const std::string& k : keys) members.header.push_back(k), members.right.push_back(true);
  for (const pbt::MemberInterval& m : last.members) {
    int exploited = 0, failed = 0;
    for (const pbt::Interval& iv : l.intervals) {
      for (const pbt::Event& e : iv.events) exploited += e.member == m.member && e.kind != "replace_failed";
      failed += iv.members[size_t(m.member)].status == "failed";
    }
    std::vector<std::string> row = {std::to_string(m.member),
                                    m.test_accuracy ? format_number(*m.test_accuracy) : m.status,
                                    std::to_string(exploited), std::to_string(failed)};
    if (validated)
      row.insert(row.begin() + 2, m.validation_accuracy ? format_number(*m.validation_accuracy) : m.status);
    for (const std::string& k : keys) row.push_back(json_cell(m.hyperparameters.value(k, Json())));
    members.rows.push_back(std::move(row));
  }
  if (validated)
    members.notes.push_back("members were ranked (selection and best) by their accuracy on the validation set held "
                            "out of the training set (/data/validation_size), not on the test set");
  members.notes.push_back("exploited: ready points at which the member took a top member's checkpoint (as one of "
                          "the bottom or after diverging); failed: intervals whose run failed (the member was then "
                          "replaced by a copy)");
  out.push_back(std::move(members));

  const int best = l.best_member();
  if (best < 0) return out;
  TextTable schedule;
  schedule.caption = "Best member " + std::to_string(best) + ": the hyperparameter schedule of its final weights";
  schedule.header = {"interval", "steps", "run", "continued from", "test accuracy"};
  schedule.right = {true, false, false, false, true};
  for (const std::string& k : keys) schedule.header.push_back(k), schedule.right.push_back(true);
  const std::vector<pbt::MemberInterval> chain = l.ancestry(best);
  for (size_t i = 0; i < chain.size(); ++i) {
    const pbt::Interval& iv = l.intervals[i + (l.intervals.size() - chain.size())];
    std::vector<std::string> row = {std::to_string(iv.index),
                                    std::to_string(iv.start_step) + "-" + std::to_string(iv.end_step), chain[i].run,
                                    chain[i].init_from.empty() ? std::string("-") : chain[i].init_from,
                                    chain[i].test_accuracy ? format_number(*chain[i].test_accuracy) : chain[i].status};
    for (const std::string& k : keys) row.push_back(json_cell(chain[i].hyperparameters.value(k, Json())));
    schedule.rows.push_back(std::move(row));
  }
  out.push_back(std::move(schedule));
  return out;
}

}  // namespace dtbench::analysis
