#include "analysis/table_command.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iterator>
#include <iostream>
#include <memory>

#include "analysis/campaign_data.hpp"
#include "analysis/campaign_table.hpp"
#include "analysis/mlperf_rcp.hpp"
#include "analysis/pbt_table.hpp"
#include "analysis/published.hpp"
#include "core/atomic_file.hpp"
#include "core/cli_checks.hpp"
#include "core/error.hpp"

namespace dtbench {
namespace {

// Whether `dir` holds a population-based training campaign (lineage.json); BadInput when it cannot be looked at.
bool has_lineage(const std::string& dir) {
  std::error_code ec;
  const bool there = std::filesystem::exists(std::filesystem::path(dir) / "lineage.json", ec);
  if (ec) throw BadInput(dir + ": " + ec.message());
  return there;
}

// An output inside the campaign folder `dir` goes beside its files, not as one of them nor into the folders the
// campaign writes: its configs/, scripts/ and runs/ (the failed runs' folder and the checkpoints under it) and any
// run's checkpoint folder (*.ckpt), and its own files (the index, spec, jobs and lineage files, the report, hidden
// files such as the lock). Other folders under it are the user's. The files it is read from are checked by name
// besides (check_not_an_input); these are the ones it owns without reading them here (found by a hunt: --output
// camp/runs/x.ckpt/header.json replaced a resumable checkpoint's header, camp/.lock a running sweep's lock).
void check_not_the_campaigns(const std::string& output, const std::string& option, const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path rel = resolved_path(output).lexically_relative(resolved_path(dir));
  if (rel.empty() || *rel.begin() == "..") return;
  const std::string first = rel.begin()->string(), name = rel.filename().string();
  bool in_checkpoint = false;
  for (auto it = rel.begin(); std::next(it) != rel.end(); ++it) in_checkpoint |= it->extension() == ".ckpt";
  if (std::distance(rel.begin(), rel.end()) > 1 &&
      (first == "configs" || first == "scripts" || first == "runs" || in_checkpoint))
    throw BadInput(option + ": " + output + " is inside " + (fs::path(dir) / first).string() +
                   ", a folder of the campaign " + dir + " (its configs, scripts, runs and checkpoints); write the "
                   "table beside them or elsewhere");
  static const char* const kOwn[] = {"campaign.json", "spec.json", "jobs.json", "lineage.json", "reproduce.json",
                                     "report.json", "REPORT.md"};
  if (std::distance(rel.begin(), rel.end()) == 1 &&
      (std::find(std::begin(kOwn), std::end(kOwn), name) != std::end(kOwn) || name.front() == '.'))
    throw BadInput(option + ": " + output + " is a file of the campaign " + dir + "; give another name");
}

// A folder of records (no campaign.json, no lineage.json) is read whole, every .json under it that is JSON: a
// Markdown, CSV or LaTeX table written there as .json was counted as an unreadable record by the next table, and
// the same command was then refused (found by a hunt). JSON of another kind (--format json, --rcps) is skipped.
void check_not_a_record_to_be(const std::string& output, const std::string& option, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || fs::exists(fs::path(dir) / "campaign.json", ec) ||
      fs::exists(fs::path(dir) / "lineage.json", ec))
    return;
  const fs::path rel = resolved_path(output).lexically_relative(resolved_path(dir));
  if (rel.empty() || *rel.begin() == ".." || fs::path(output).extension() != ".json") return;
  throw BadInput(option + ": " + output + " is a .json file inside the folder of records " + dir +
                 ", where the next table would take this table for an unreadable record; write it elsewhere or under "
                 "another extension");
}

}  // namespace

void add_table_command(CLI::App& app) {
  struct Opts {
    std::string dir, format = "md", published, output, rcps;
    std::vector<std::string> group_by, metrics;
    std::string group_by_text, metrics_text;  // as given: one word, comma-separated
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("table", "Regenerate a result table from a campaign folder or from published data");
  // Given empty ('' from an unset variable), each was taken for not given (found by a hunt).
  cmd->add_option("dir", o->dir, "Campaign folder (dtbench sweep --out), folder of run records, or one record")
      ->check(cli::non_empty);
  auto* format = cmd->add_option("--format", o->format,
                  "md, csv or latex; or json: the campaign's runs and records as read (what analysis/plot.py reads)")
      ->capture_default_str();
  // One word each, split here: as list options they took the campaign folder after them for one more key (found
  // by a hunt).
  auto* group_by = cmd->add_option("--group-by", o->group_by_text,
                                   "Row keys, comma-separated (default: the sweep's axes), e.g. reducer.name,ranks");
  std::string metric_names;
  for (const auto& m : analysis::all_metrics()) metric_names += (metric_names.empty() ? "" : ", ") + m;
  auto* metrics = cmd->add_option("--metrics", o->metrics_text, "Metric columns, comma-separated: " + metric_names);
  cmd->add_option("--published", o->published, "Print a published table instead (imagenet-resnet50, mlperf-resnet-rcp)")
      ->check(cli::non_empty_value);
  auto* output = cmd->add_option("--output", o->output, "Write to this file instead of standard output");
  auto* rcps = cmd->add_option("--rcps", o->rcps,
                  "Write MLPerf reference convergence points (epochs to the target per global batch, from the runs "
                  "that reached it) to this JSON file, for MLPerf's RCP checker --custom_rcps; prints no table");
  cmd->callback([o, format, output, rcps, group_by, metrics] {
    const auto split = [](const std::string& text) {
      std::vector<std::string> words;
      for (size_t from = 0;; ) {
        const size_t comma = text.find(',', from);
        words.push_back(text.substr(from, comma - from));
        if (comma == std::string::npos) return words;
        from = comma + 1;
      }
    };
    if (group_by->count() > 0) o->group_by = split(o->group_by_text);
    if (metrics->count() > 0) o->metrics = split(o->metrics_text);
    const bool as_json = o->format == "json";
    analysis::Format f = analysis::Format::md;
    try {
      if (!as_json) f = analysis::parse_format(o->format);
    } catch (const BadInput&) {
      throw BadInput("--format: expected one of \"md\", \"csv\", \"latex\", \"json\", got \"" + o->format + "\"");
    }
    for (const auto& key : o->group_by)
      if (key.empty()) throw BadInput("--group-by: an empty key (the keys are separated by commas)");
    for (const auto& key : o->metrics)
      if (key.empty()) throw BadInput("--metrics: an empty name (the names are separated by commas)");
    for (const auto* list : {&o->group_by, &o->metrics})  // a column twice (a CSV header twice) says nothing more
      if (const std::string* twice = cli::first_repeated(*list))
        throw BadInput(std::string(list == &o->group_by ? "--group-by " : "--metrics ") + *twice + ": given twice");
    // Only a sweep campaign's table has rows to group and metric columns to choose.
    const bool columns = !o->group_by.empty() || !o->metrics.empty();
    if (columns && !o->published.empty())
      throw BadInput("--group-by and --metrics shape a campaign's table; --published prints the table as published");
    analysis::CampaignData c;
    std::string text;
    bool no_rcps = false;  // --rcps, and no point gave one: nothing written
    // Where the output goes is input too: a folder, a device, a missing folder or an empty name (an unset shell
    // variable, which would have printed the table instead) is refused before any reading.
    if (output->count() > 0) check_output_file(o->output, "--output");
    if (rcps->count() > 0) check_output_file(o->rcps, "--rcps");
    if (rcps->count() > 0 && (output->count() > 0 || format->count() > 0 || columns))
      throw BadInput("--rcps writes the RCP file and prints no table: --output, --format, --group-by and --metrics are "
                     "for tables");
    std::vector<std::pair<std::string, std::filesystem::path>> inputs;  // what the output must not replace
    // A pbt campaign in its first interval: its members' records were tabulated as a sweep's, one member left out
    // (found by a hunt).
    if (!o->dir.empty() && pbt_campaign_before_its_lineage(o->dir))
      throw BadInput(o->dir + ": a dtbench pbt campaign that has not finished its first interval (no lineage.json "
                     "yet): its tables come with the lineage; the members' records so far: dtbench table " +
                     (std::filesystem::path(o->dir) / "runs").string());
    if (as_json) {
      if (!o->rcps.empty() || !o->published.empty() || o->dir.empty())
        throw BadInput("--format json needs a campaign folder (not --rcps or --published)");
      if (!o->group_by.empty() || !o->metrics.empty())
        throw BadInput("--format json gives every run as read: --group-by and --metrics are for tables");
      if (has_lineage(o->dir))
        throw BadInput(o->dir + ": a population-based training campaign (lineage.json): --format json reads sweep "
                       "campaigns and folders of records, such as its members' " + o->dir + "/runs");
      c = analysis::load_campaign(o->dir);
      // A file name is bytes, not always UTF-8: such bytes become U+FFFD rather than the serialiser's exception.
      text = analysis::campaign_json(c).dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
    } else if (!o->rcps.empty()) {
      if (!o->published.empty() || o->dir.empty()) throw BadInput("--rcps needs a campaign folder, not --published");
      check_not_the_campaigns(o->rcps, "--rcps", o->dir);
      c = analysis::load_campaign(o->dir);
      check_not_an_input(o->rcps, "--rcps", c.files);
      const analysis::RcpSet set = analysis::reference_convergence_points(c);
      for (const std::string& why : set.skipped) std::cerr << "table --rcps: left out " << why << "\n";
      for (const std::string& what : set.fewer_runs) std::cerr << "table --rcps: " << what << "\n";
      no_rcps = set.rcps.empty();
      if (!no_rcps) {
        write_file_atomic(o->rcps, set.rcps.dump(2) + "\n", false);
        std::cout << "table --rcps: " << set.rcps.size() << " reference convergence points in " << o->rcps << "\n";
      }
    } else if (!o->published.empty()) {
      if (!o->dir.empty()) throw BadInput("give either a campaign folder or --published, not both");
      inputs.emplace_back("the published table read", analysis::published_file(o->published));
      text = analysis::render(analysis::published_table(analysis::load_published(o->published), f), f);
    } else {
      if (o->dir.empty()) throw BadInput("give a campaign folder (dtbench table results/NAME) or --published NAME");
      if (has_lineage(o->dir)) {
        // A population-based training campaign (dtbench pbt).
        if (columns)
          throw BadInput(o->dir + ": a population-based training campaign, whose tables have fixed columns: "
                         "--group-by and --metrics are for sweep campaigns and folders of records");
        inputs.emplace_back("the lineage file", std::filesystem::path(o->dir) / "lineage.json");
        for (const analysis::TextTable& t : analysis::pbt_tables(pbt::read_lineage(std::filesystem::path(o->dir) / "lineage.json"), f))
          text += analysis::render(t, f) + "\n";
      } else {
        c = analysis::load_campaign(o->dir);
        text = analysis::render(analysis::campaign_table(c, {o->group_by, o->metrics}, f), f);
      }
    }
    if (o->rcps.empty()) {
      if (o->output.empty()) {
        std::cout << text << std::flush;
      } else {
        inputs.insert(inputs.end(), c.files.begin(), c.files.end());
        check_not_an_input(o->output, "--output", inputs);
        if (!o->dir.empty()) {
          check_not_the_campaigns(o->output, "--output", o->dir);
          if (!as_json) check_not_a_record_to_be(o->output, "--output", o->dir);
        }
        write_file_atomic(o->output, text, false);
      }
    }
    // The table (or the RCPs) is written, from the records that could be read; exit 1 so that no script takes it
    // for a complete result (README "Exit codes").
    const std::vector<std::string> unreadable = analysis::unreadable_records(c);
    if (unreadable.empty()) {
      if (no_rcps) throw RunFailed("table --rcps: no point of " + o->dir + " gives an RCP (see above)");
      return;
    }
    size_t files = 0;
    for (const auto& p : c.points)
      for (const auto& r : p.runs) files += r.state != "missing";
    std::string why = "table: " + std::to_string(unreadable.size()) + " of " + std::to_string(files) +
                      (o->rcps.empty() ? " run records could not be read; the table counts them as unreadable:"
                                       : no_rcps ? " run records could not be read, and no point gives an RCP:"
                                                 : " run records could not be read; the RCPs leave them out:");
    for (const auto& u : unreadable) why.append("\n  ").append(u);
    throw RunFailed(why);
  });
}

}  // namespace dtbench
