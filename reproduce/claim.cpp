#include "reproduce/claim.hpp"

#include <algorithm>
#include <set>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "core/published_dir.hpp"
#include "core/json_fields.hpp"
#include "reducers/commands.hpp"
#include "reproduce/finding.hpp"
#include "slurm/expand.hpp"
#include "slurm/spec.hpp"

namespace fs = std::filesystem;

namespace dtbench::reproduce {
namespace {

// Experiment names become folder names: keep them to letters, digits, '-', '_' and '.' (not leading).
bool safe_name(const std::string& s) {
  if (s.empty() || s.size() > 64 || s[0] == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  });
}

Experiment parse_experiment(const JsonFields& f, const fs::path& dir, const std::string& where, bool to_run) {
  Experiment e;
  e.name = f.string("name");
  if (!safe_name(e.name))
    throw BadInput(where + f.pointer("name") + ": expected a name of letters, digits, '-', '_', '.', got \"" +
                   e.name + "\"");
  if (f.has("sweep") + f.has("allreduce") + f.has("published") != 1)
    throw BadInput(where + f.pointer("name") +
                   ": an experiment has exactly one of \"sweep\", \"allreduce\" and \"published\"");
  if (f.has("published")) {
    f.only({"name", "published"});
    e.kind = "published";
    e.files = f.strings("published");
    for (const auto& file : e.files)
      if (!fs::is_regular_file(published_dir() / file) || file.find('/') != std::string::npos)
        throw BadInput(where + f.pointer("published") + ": \"" + file + "\" is not a file of " +
                       published_dir().string());
    return e;
  }
  if (f.has("sweep")) {
    f.only({"name", "sweep"});
    e.kind = "sweep";
    std::string file = f.string("sweep");
    if (file.empty() || fs::path(file).is_absolute() || file.find("..") != std::string::npos)
      throw BadInput(where + f.pointer("sweep") + ": expected a spec file name in the claim's folder, got \"" + file +
                     "\"");
    e.spec = dir / file;
    // A spec that does not load, or a point whose run config is invalid, stops the claim here, before anything
    // runs or is written (the runs folder is only named, not created).
    slurm::Spec spec = slurm::load_spec(e.spec);
    try {
      slurm::expand(spec, dir / "runs");
    } catch (const BadInput& err) {
      throw BadInput(e.spec.string() + ": " + err.what());
    }
    return e;
  }
  f.only({"name", "allreduce"});
  e.kind = "allreduce";
  JsonFields a = f.fields("allreduce");
  a.only({"ranks", "transport", "args"});
  for (const auto& r : a.array("ranks")) {
    if (!r.is_number_integer() || r.get<int64_t>() < 1 || r.get<int64_t>() > 64)
      throw BadInput(where + a.pointer("ranks") + ": expected rank counts in [1, 64], got " + r.dump());
    // One file per rank count: a count twice ran and listed the same sweep twice (found by a hunt).
    if (std::find(e.ranks.begin(), e.ranks.end(), r.get<int>()) != e.ranks.end())
      throw BadInput(where + a.pointer("ranks") + ": " + r.dump() + " is given twice");
    e.ranks.push_back(r.get<int>());
  }
  if (e.ranks.empty()) throw BadInput(where + a.pointer("ranks") + ": expected at least one rank count");
  e.transport = a.string("transport");
  if (e.transport != "thread" && e.transport != "mpi")
    throw BadInput(where + a.pointer("transport") + ": expected \"thread\" or \"mpi\", got \"" + e.transport + "\"");
  e.args = a.strings("args");
  for (const auto& arg : e.args)
    for (const std::string set : {"--json", "--ranks", "--transport"})
      if (arg == set || arg.rfind(set + "=", 0) == 0)
        throw BadInput(where + a.pointer("args") + ": " + set + " is set by dtbench reproduce");
  // The arguments parse as `dtbench allreduce`'s (an unknown option or a malformed value is refused here, before
  // any run).
  for (const int ranks : e.ranks) try {
      check_allreduce_args(e.args, e.transport, ranks, to_run);
    } catch (const CLI::ParseError& err) {
      throw BadInput(where + a.pointer("args") + ": not arguments of dtbench allreduce: " + err.what());
    } catch (const BadInput& err) {
      throw BadInput(where + a.pointer("args") + ": " + err.what() + " (at " + std::to_string(ranks) + " ranks)");
    }
  return e;
}

Claim parse_claim(const fs::path& dir, const std::string& where, const Json& doc, bool to_run) {
  if (!doc.is_object()) throw BadInput(where + "expected a JSON object");
  JsonFields f(doc, "");
  f.only({"id", "title", "seed", "setup", "criterion", "experiments"});
  Claim c;
  c.dir = dir;
  c.id = f.string("id");
  if (c.id != dir.filename().string())
    throw BadInput(where + "/id: \"" + c.id + "\" differs from the folder's name \"" + dir.filename().string() + "\"");
  c.title = f.string("title");
  JsonFields seed = f.fields("seed");
  seed.only({"file", "quote"});
  c.seed_file = seed.string("file");
  c.quote = seed.string("quote");
  c.setup = f.string("setup");
  c.criterion = f.object("criterion");
  JsonFields crit = f.fields("criterion");
  crit.string("text");
  const CriterionKind& kind = criterion_kind(crit.string("kind"), where + "/criterion/kind");
  kind.check(c.criterion, where + "/criterion");
  JsonFields ex = f.fields("experiments");
  ex.only({"quick", "full"});
  for (const auto& scale : scale_names()) {
    c.scales[scale];  // present also when empty: a claim may have no experiment at a scale
    std::set<std::string> names;
    for (const auto& item : ex.items(scale)) {
      Experiment e = parse_experiment(item, dir, where, to_run);
      if (!names.insert(e.name).second)
        throw BadInput(where + item.pointer("name") + ": experiment \"" + e.name + "\" is named twice");
      c.scales[scale].push_back(std::move(e));
    }
    // What the criterion names among this scale's experiments exists (it was found missing only in the report).
    if (kind.check_experiments && !c.scales[scale].empty())
      kind.check_experiments(c.criterion, c.scales[scale], where + "/criterion");
  }
  return c;
}

}  // namespace

Claim load_claim(const fs::path& dir, bool to_run) {
  const fs::path file = dir / "claim.json";
  const std::string where = file.string() + ": ";
  try {
    return parse_claim(dir, where, read_json_file(file.string(), "claim"), to_run);
  } catch (const BadInput& e) {
    // The top-level fields' errors name only their pointer; the others already name the file (or a spec file).
    const std::string msg = e.what();
    if (msg.rfind(dir.string(), 0) == 0) throw;
    throw BadInput(where + msg);
  }
}

std::vector<std::string> claim_ids(const fs::path& root) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec))
    if (entry.is_directory() && fs::is_regular_file(entry.path() / "claim.json"))
      ids.push_back(entry.path().filename().string());
  if (ec) throw BadInput(root.string() + ": cannot list the claims: " + ec.message());
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace dtbench::reproduce
