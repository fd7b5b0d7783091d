#include "reproduce/reproduce_command.hpp"

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <map>

#include "core/atomic_file.hpp"
#include "core/cli_checks.hpp"
#include "core/dir_lock.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "core/regular_file.hpp"
#include "core/run_record.hpp"
#include "reproduce/claim.hpp"
#include "reproduce/evidence.hpp"
#include "reproduce/experiments.hpp"
#include "reproduce/report.hpp"
#include "slurm/process.hpp"

namespace fs = std::filesystem;

namespace dtbench {
namespace {

struct Options {
  std::vector<std::string> claims;
  std::string out;
  std::string claims_dir = DTBENCH_CLAIMS_DIR;
  std::string scale = "quick";
  bool local = false, submit = false, wait = false, dry_run = false, report_only = false;
  bool claims_dir_given = false, scale_given = false;  // --report-only reads both from DIR: given, they are refused
  int jobs = 1;
};

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  if (!(in >> a >> b >> c)) return "unknown";
  return a + " " + b + " " + c;
}

// A claim folder in DIR holds the definition its runs started from, and reproduce.json its files' digests; a
// different definition in the repository means the criteria or the experiments changed after the runs: refused,
// since criteria are fixed beforehand. The digests decide where they are kept (a deleted copy let a changed
// criterion through, and the new one was recorded as the runs' own).
void check_same_definition(const reproduce::Claim& c, const std::map<std::string, std::string>& repo,
                           const fs::path& copy, const Json& index) {
  if (index.contains("definitions") && index["definitions"].contains(c.id)) {
    const Json& recorded = index["definitions"][c.id];
    const std::string name = reproduce::first_digest_difference(reproduce::definition_digests(repo), recorded);
    if (name.empty()) return;
    throw BadInput((c.dir / name).string() + ": differs from the claim's definition as its runs started here (" +
                   (copy.parent_path() / "reproduce.json").string() + ": /definitions/" + c.id + "/" + name +
                   "): criteria are fixed before the runs; use a new --out folder");
  }
  if (!fs::exists(copy / "claim.json")) return;
  for (const auto& [name, text] : repo) {
    std::error_code ec;
    if (!fs::is_regular_file(copy / name, ec) ||
        read_regular_file(copy / name, size_t{1} << 20, "claim file") != text)
      throw BadInput((copy / name).string() + ": differs from " + (c.dir / name).string() +
                     ": the claim's definition changed since its runs started here (criteria are fixed before the "
                     "runs); use a new --out folder");
  }
}

// The run records of DIR's sweep experiments that could not be read. A report made without them is written, and
// the command exits 1 naming them, as `dtbench table` does (README "Exit codes").
void fail_on_unreadable_records(const fs::path& out) {
  const Json index = reproduce::read_index(out);
  std::vector<std::string> unreadable;
  for (const auto& id : index["claims"]) {
    const reproduce::Claim c = reproduce::load_claim(out / id.get<std::string>(), /*to_run=*/false);
    std::string missing;
    for (const auto& camp : reproduce::load_sweeps(out / c.id, c.scales.at(index["scale"].get<std::string>()), missing))
      for (const auto& u : analysis::unreadable_records(camp)) unreadable.push_back(u);
  }
  if (unreadable.empty()) return;
  std::string why = "reproduce: " + std::to_string(unreadable.size()) +
                    " run records could not be read; the report counts their runs as not done:";
  for (const auto& u : unreadable) why.append("\n  ").append(u);
  throw RunFailed(why);
}

// One reproduce at a time on a folder (a second one ran beside the first, and the first, ending, rewrote
// reproduce.json without the second's session). Taken once everything is validated, as a sweep takes its own.
constexpr const char* kBusy = "another dtbench reproduce works on this folder; wait for it to end";

void run(const Options& o) {
  const fs::path out = o.out;
  if (o.report_only) {
    if (!o.claims.empty() || o.local || o.submit || o.dry_run || o.jobs != 1 || o.claims_dir_given || o.scale_given)
      throw BadInput("--report-only takes only --out: it regenerates the report of what DIR holds");
    check_output_folder(out, "--out", true);
    if (std::error_code ec; !fs::is_regular_file(out / "reproduce.json", ec))
      throw BadInput(out.string() + ": no reproduce.json (not a folder written by dtbench reproduce)");
    // Not while a reproduce runs there; the lock file is not made here (a folder that fails the report's checks is
    // left as it was), so a folder no reproduce of this version wrote is read without it.
    std::optional<DirLock> lock;
    if (std::error_code ec; fs::exists(out / ".lock", ec)) lock.emplace(out / ".lock", kBusy);
    std::cout << reproduce::verdict_table(reproduce::write_report(out));
    fail_on_unreadable_records(out);
    return;
  }
  if (o.local + o.submit + o.dry_run > 1) throw BadInput("--local, --submit and --dry-run exclude each other");
  if (o.wait && !o.submit) throw BadInput("--wait needs --submit");
  if (o.jobs < 1) throw BadInput("--jobs: at least 1, got " + std::to_string(o.jobs));
  if (o.jobs > 1 && !o.local) throw BadInput("--jobs needs --local: it runs a sweep's runs here at once");
  if (o.scale != "quick" && o.scale != "full")
    throw BadInput("--scale: expected quick or full, got '" + o.scale + "'");
  const auto known = reproduce::claim_ids(o.claims_dir);
  // A --claims folder without claims (results/ for results/claims) ran nothing and reported nothing, exit 0.
  if (known.empty())
    throw BadInput("--claims " + o.claims_dir + ": no claims there (a claim is a folder <id>/ with a claim.json)");
  std::vector<std::string> ids = o.claims.empty() ? known : o.claims;
  if (const std::string* twice = cli::first_repeated(ids))  // planned and run twice, reported twice (a hunt)
    throw BadInput("claim '" + *twice + "' is given twice");
  for (const auto& id : ids)
    if (std::find(known.begin(), known.end(), id) == known.end())
      throw BadInput("unknown claim '" + id + "'; claims: " + reproduce::join(known, ", "));
  // Without a mode it wrote the folder and a report of nothing run, exit 0: every claim inconclusive.
  if (!o.local && !o.submit && !o.dry_run)
    throw BadInput("give --local, --submit or --dry-run (--report-only --out DIR regenerates the report of what DIR "
                   "holds)");
  // Validate everything before writing anything: every claim, spec and the folder's earlier state.
  std::vector<reproduce::Claim> claims;
  for (const auto& id : ids) {
    claims.push_back(reproduce::load_claim(fs::path(o.claims_dir) / id));
    if (claims.back().scales.at(o.scale).empty())
      throw BadInput((claims.back().dir / "claim.json").string() + ": /experiments/" + o.scale +
                     ": no experiment at this scale (--scale " + o.scale + ")");
  }
  Json index = {{"kind", "dtbench-reproduction"}, {"scale", o.scale}, {"claims", Json::array()},
                {"sessions", Json::array()}};
  // A file, a file above it, a folder that cannot be written or searched, a loop of links: first, so that what
  // follows looks into a folder it can read (a folder it could not search was an internal error).
  check_output_folder(out, "--out", !o.dry_run);
  check_campaign_kind(out, "reproduce.json");  // a sweep's or a pbt campaign's would get a report beside it
  // The report goes beside the claims' inputs, never among their definitions (--out equal to --claims wrote
  // REPORT.md and each claim's inputs into the definitions' folders; found by a hunt).
  {
    const fs::path at = resolved_path(out), defs = resolved_path(o.claims_dir);
    if (std::mismatch(defs.begin(), defs.end(), at.begin(), at.end()).first == defs.end() ||
        std::mismatch(at.begin(), at.end(), defs.begin(), defs.end()).first == at.end())
      throw BadInput("--out " + o.out + ": the claims' definitions are in " + o.claims_dir +
                     "; give a folder that neither holds them nor lies among them");
  }
  const auto read_earlier = [&] {
    if (std::error_code ec; !fs::exists(out / "reproduce.json", ec)) return;
    index = reproduce::read_index(out);
    if (index["scale"] != o.scale)
      throw BadInput((out / "reproduce.json").string() + ": this folder holds scale '" +
                     index["scale"].get<std::string>() + "', not '" + o.scale + "': use another --out");
  };
  read_earlier();
  // Every folder the claims write: a file where one goes was found only after reproduce.json was written.
  for (const auto& c : claims)
    for (const auto& e : c.scales.at(o.scale)) check_output_folder(out / c.id / e.name, "--out", !o.dry_run);
  // The claims an earlier session listed are reported too: each must still load from the folder and be judged from
  // what it holds, as the report will judge it (a damaged claim not run now was refused after reproduce.json was
  // rewritten, or after every run of the claims given; a hunt). The claims given are checked below.
  if (std::error_code ec; fs::exists(out / "reproduce.json", ec))
    reproduce::check_report_inputs(out, std::set<std::string>(ids.begin(), ids.end()));
  std::vector<std::map<std::string, std::string>> definitions;  // each claim's files, read once
  for (const auto& c : claims) {
    definitions.push_back(reproduce::definition_files(c.dir));
    check_same_definition(c, definitions.back(), out / c.id, index);
    for (const auto& e : c.scales.at(o.scale)) reproduce::check_published_copies(e, out / c.id);
  }
  slurm::require_launcher(o.local, o.submit);
  reproduce::RunOptions ro;
  ro.mode = o.local ? reproduce::RunMode::local : o.submit ? reproduce::RunMode::submit : reproduce::RunMode::dry_run;
  ro.wait = o.wait;
  ro.jobs = o.jobs;
  if (ro.mode != reproduce::RunMode::dry_run) {
    // What an earlier run left in the sweeps' folders (their campaigns and records) is read as a dry run reads it,
    // before anything is written: a damaged campaign was refused only after reproduce.json and the claims' files.
    reproduce::RunOptions look = ro;
    look.mode = reproduce::RunMode::dry_run;
    look.checked_as = ro.mode;  // and Slurm's judgement of the requests, mpirun's slots
    look.wait = false;  // --wait goes with --submit only: the dry run refused it (every --submit --wait, exit 2)
    std::ostream quiet(nullptr);
    for (const auto& c : claims)
      for (const auto& e : c.scales.at(o.scale))
        if (e.kind == "sweep") reproduce::run_experiment(e, out / c.id, look, quiet);
  }
  if (ro.mode == reproduce::RunMode::dry_run) {
    for (const auto& c : claims) {
      std::cout << "claim " << c.id << ": " << c.title << "\n";
      for (const auto& e : c.scales.at(o.scale)) reproduce::run_experiment(e, out / c.id, ro, std::cout);
    }
    return;
  }
  fs::create_directories(out);
  const DirLock lock(out / ".lock", kBusy);
  // Read again under the lock: a reproduce that ended since the first reading recorded its session there.
  read_earlier();
  std::set<std::string> in_index(index["claims"].begin(), index["claims"].end());
  for (size_t i = 0; i < claims.size(); ++i) {
    const auto& c = claims[i];
    fs::create_directories(out / c.id);
    for (const auto& [name, text] : definitions[i]) write_file_atomic(out / c.id / name, text, false);
    if (in_index.insert(c.id).second) index["claims"].push_back(c.id);
    index["definitions"][c.id] = reproduce::definition_digests(definitions[i]);
  }
  // A claim of the folder without digests (its runs started before dtbench recorded them): its copy's, as it is
  // now, so that every claim the folder reports has them from here on.
  for (const auto& id : index["claims"])
    if (!index["definitions"].contains(id.get<std::string>()))
      index["definitions"][id.get<std::string>()] = reproduce::definition_digests(reproduce::definition_files(out / id.get<std::string>()));
  Json session = {{"started_utc", utc_timestamp()}, {"load_start", load_average()}};
  const Json p = provenance();
  session["dtbench"] = dtbench_build();
  session["machine"] = p["cpu"].value("model", "?") + ", " + std::to_string(p["cpu"].value("logical_cores", 0)) +
                       " logical cores, " + std::to_string(p["cpu"].value("memory_bytes", int64_t{0}) >> 30) + " GiB";
  session["mode"] = o.local ? (o.jobs > 1 ? "local, " + std::to_string(o.jobs) + " runs at once" : std::string("local"))
                            : (o.wait ? "submit --wait" : "submit");
  // The session is recorded before the experiments start, so a run that is killed still says when and where it
  // ran ("interrupted" in the report until a session finishes).
  index["sessions"].push_back(session);
  write_json_atomic(out / "reproduce.json", index, false);
  std::vector<std::string> unfinished;
  for (const auto& c : claims) {
    std::cout << "claim " << c.id << ": " << c.title << std::endl;
    for (const auto& e : c.scales.at(o.scale))
      if (!reproduce::run_experiment(e, out / c.id, ro, std::cout)) unfinished.push_back(c.id + "/" + e.name);
  }
  index["sessions"].back()["finished_utc"] = utc_timestamp();
  index["sessions"].back()["load_end"] = load_average();
  write_json_atomic(out / "reproduce.json", index, false);
  std::cout << "\n" << reproduce::verdict_table(reproduce::write_report(out));
  std::cout << "report: " << (out / "REPORT.md").string() << "\n";
  // The verdicts above judge what the experiments left; a claim may stand without a failed part (claim f without
  // its fitted profile), so the message names the experiments, not the claims' verdicts.
  if (!unfinished.empty())
    throw RunFailed("some experiments did not finish (see above): " + reproduce::join(unfinished, ", "));
  fail_on_unreadable_records(out);
}

}  // namespace

void add_reproduce_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("reproduce", "Run the seeds' claims and write REPORT.md with a verdict per claim");
  cmd->add_option("claims", o->claims, "Claim ids (default: all; results/claims/<id>)");
  cmd->add_option("--out", o->out, "Report folder (records, REPORT.md, report.json)")->required();
  cmd->add_option("--scale", o->scale, "quick (minutes) or full (the committed report)")->capture_default_str();
  cmd->add_flag("--local", o->local, "Run the experiments here with mpirun (no Slurm)");
  cmd->add_option("--jobs", o->jobs, "With --local: how many of a sweep's runs at once, each its own mpirun")
      ->capture_default_str();
  cmd->add_flag("--submit", o->submit, "Submit the sweep experiments with sbatch");
  cmd->add_flag("--wait", o->wait, "With --submit: wait for the jobs, then report");
  cmd->add_flag("--dry-run", o->dry_run, "Print what would run; write nothing");
  cmd->add_flag("--report-only", o->report_only, "Regenerate REPORT.md and report.json from DIR's records");
  cmd->add_option("--claims", o->claims_dir, "Folder of claim definitions")
      ->capture_default_str()
      ->check(cli::non_empty);  // '' named no option in its error (found by a hunt)
  cmd->callback([o, cmd] {
    o->claims_dir_given = cmd->count("--claims") > 0;
    o->scale_given = cmd->count("--scale") > 0;
    run(*o);
  });
}

}  // namespace dtbench
