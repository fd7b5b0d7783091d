#include "reproduce/report.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/atomic_file.hpp"
#include "core/crc32.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/regular_file.hpp"
#include "analysis/text_table.hpp"
#include "reproduce/claim.hpp"
#include "reproduce/evidence.hpp"

namespace fs = std::filesystem;

namespace dtbench::reproduce {
namespace {

// The seed's words as a block quote, each line as literal text.
std::string quote_block(const std::string& text) {
  std::string s;
  size_t from = 0;
  for (size_t end; (end = text.find('\n', from)) != std::string::npos; from = end + 1)
    s += "> " + analysis::md_text(text.substr(from, end - from), true) + "\n";
  return s + "> " + analysis::md_text(text.substr(from), true) + "\n";
}

std::string sessions_text(const Json& sessions) {
  std::string s;
  for (const auto& x : sessions) {
    const bool ended = x.contains("finished_utc");
    s += "- " + x.value("started_utc", "?") + " to " + (ended ? x.value("finished_utc", "?") : "(interrupted)") +
         ": " + x.value("dtbench", "?") + " on " + x.value("machine", "?") + "; load average " +
         x.value("load_start", "?") + " at the start" + (ended ? ", " + x.value("load_end", "?") + " at the end" : "") +
         "; mode " + x.value("mode", "?") + "\n";
  }
  return s.empty() ? "- no experiments have been run in this folder yet\n" : s;
}

// The figures' numbers to 10 significant digits, so that the same records give the same report.json on any
// machine: the last bits of a fit's results differ between CPUs (a -march=native build may contract a*b+c into
// fused multiply-adds differently, and glibc's libm picks a variant per CPU). Seen: claim f's fitted times 2.4e-16
// apart, relative, between an AMD EPYC and an Intel Xeon; 10 digits leave a margin of a million.
Json portable_numbers(Json j) {
  if (j.is_number_float()) {
    char text[32];
    std::snprintf(text, sizeof text, "%.10g", j.get<double>());
    return std::strtod(text, nullptr);
  }
  if (j.is_structured())
    for (auto& x : j) x = portable_numbers(std::move(x));
  return j;
}

}  // namespace

Json read_index(const fs::path& dir) {
  const fs::path file = dir / "reproduce.json";
  Json doc = read_json_file(file.string(), "reproduction index");
  try {
    if (!doc.is_object()) throw_wrong_type("", "an object", doc);
    JsonFields f(doc, "");
    f.only({"kind", "scale", "claims", "sessions", "definitions"});
    if (f.string("kind") != "dtbench-reproduction")
      throw BadInput("/kind: expected \"dtbench-reproduction\", got \"" + f.string("kind") + "\"");
    const std::string scale = f.string("scale");
    if (scale != "quick" && scale != "full") throw BadInput("/scale: expected quick or full, got \"" + scale + "\"");
    const auto ids = f.strings("claims");
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i].empty() || ids[i] == "." || ids[i] == ".." || ids[i].find('/') != std::string::npos ||
          std::any_of(ids[i].begin(), ids[i].end(), [](unsigned char ch) { return ch < 0x20 || ch == 0x7f; }))
        throw BadInput("/claims/" + std::to_string(i) + ": " + Json(ids[i]).dump().substr(0, 80) +
                       " is not a claim id (a folder name); control characters are not allowed either");
    for (size_t i = 0; i < ids.size(); ++i)
      for (size_t k = 0; k < i; ++k)
        if (ids[i] == ids[k])
          throw BadInput("/claims/" + std::to_string(i) + ": \"" + ids[i] + "\" is listed twice (also /claims/" +
                         std::to_string(k) + ")");
    if (f.has("definitions")) {
      const JsonFields defs = f.fields("definitions");
      const std::vector<std::string> listed = f.strings("claims");
      // A claim's entry records all of its files, claim.json among them: an emptied entry let an edited max_drop
      // turn claim b (a hunt). A claim without an entry is one whose runs started before dtbench recorded them
      // (folders of earlier builds recorded the claims each session ran); the next session records its copy's.
      for (const auto& id : listed)
        if (f.object("definitions").contains(id) && (!f.object("definitions")[id].is_object() ||
                                                     !f.object("definitions")[id].contains("claim.json")))
          throw BadInput(defs.pointer(id) + "/claim.json: missing; a claim's entry holds the digests of every file "
                         "of its definition");
      for (const auto& [id, files] : f.object("definitions").items()) {
        if (std::find(listed.begin(), listed.end(), id) == listed.end())
          throw BadInput(defs.pointer(id) + ": not a claim of /claims");
        const JsonFields named = defs.fields(id);
        for (const auto& [name, crc] : files.items()) {
          const std::string text = named.string(name);
          if (text.size() != 8 || text.find_first_not_of("0123456789abcdef") != std::string::npos ||
              name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
            throw BadInput(named.pointer(name) + ": expected the CRC-32 of a file of the claim's folder as 8 hex "
                           "digits, got " + crc.dump().substr(0, 40));
        }
      }
    }
    for (const JsonFields& session : f.items("sessions")) {
      session.only({"started_utc", "finished_utc", "load_start", "load_end", "dtbench", "machine", "mode"});
      for (const char* key : {"started_utc", "finished_utc", "load_start", "load_end", "dtbench", "machine", "mode"})
        if (session.has(key)) session.string(key);
    }
  } catch (const BadInput& e) {
    throw BadInput(file.string() + ": " + e.what());
  }
  return doc;
}

std::map<std::string, std::string> definition_files(const fs::path& dir) {
  std::map<std::string, std::string> files;
  std::error_code ec;
  for (fs::directory_iterator e(dir, ec), end; !ec && e != end; e.increment(ec))
    if (std::error_code kind; e->is_regular_file(kind) && e->path().extension() == ".json")
      files[e->path().filename().string()] = read_regular_file(e->path(), size_t{1} << 20, "claim file");
  return files;
}

std::string first_digest_difference(const Json& now, const Json& recorded) {
  for (const auto& [file, crc] : now.items())
    if (!recorded.contains(file) || recorded[file] != crc) return file;
  for (const auto& [file, crc] : recorded.items())
    if (!now.contains(file)) return file;
  return "";
}

Json definition_digests(const std::map<std::string, std::string>& files) {
  Json out = Json::object();
  for (const auto& [name, text] : files) out[name] = crc32_hex(text);
  return out;
}

namespace {

// The criteria are the ones the runs started from: a claim's file edited since (a looser max_drop turned a verdict,
// and the report quoted the old text beside the new number) is refused, and so is a definition file the digests
// do not name (an entry cut down to claim.json let an edited spec through).
void check_definitions(const fs::path& dir, const Json& doc, const std::set<std::string>& except) {
  if (!doc.contains("definitions")) return;  // a folder from before the digests
  const fs::path index = dir / "reproduce.json";
  for (const auto& [id, recorded] : doc["definitions"].items()) {
    if (except.count(id)) continue;
    const Json now = definition_digests(definition_files(dir / id));
    const std::string name = first_digest_difference(now, recorded);
    if (name.empty()) continue;
    const fs::path file = dir / id / name;
    if (!recorded.contains(name))
      throw BadInput(file.string() + ": a file of the claim's definition without its digest in " + index.string() +
                     " (/definitions/" + id + "): added or unrecorded after the runs started; remove it, or run the "
                     "claim in a new --out folder");
    throw BadInput(file.string() + ": " + (now.contains(name) ? "differs from" : "missing; it is part of") +
                   " the claim's definition as its runs started (" + index.string() + ": /definitions/" + id + "/" +
                   name + "); criteria are fixed before the runs: restore it, or run the claim in a new --out folder");
  }
}

struct Report {
  std::vector<ClaimVerdict> verdicts;
  std::string md;
  Json json;
};

Report make_report(const fs::path& dir, const std::set<std::string>& except) {
  const fs::path index = dir / "reproduce.json";
  Json doc = read_index(dir);
  JsonFields f(doc, "");
  const std::string scale = f.string("scale");
  check_definitions(dir, doc, except);
  std::vector<ClaimVerdict> out;
  Json claims_json = Json::array();
  std::string body;
  for (const auto& id : f.strings("claims")) {
    if (except.count(id)) continue;
    Claim c = load_claim(dir / id, /*to_run=*/false);
    const auto& experiments = c.scales.at(scale);
    if (experiments.empty())  // as reproduce refuses before the runs
      throw BadInput((dir / id / "claim.json").string() + ": /experiments/" + scale + ": no experiment at this scale");
    ClaimVerdict v{c.id, c.title, criterion_kind(c.criterion["kind"], index.string()).evaluate(
                                      c, c.criterion, experiments, dir / id)};
    // The claim's texts are text (claim a's setup has "K*m" twice, which was emphasis between them); the report's
    // own markup goes around them.
    body += "\n## " + c.id + ". " + analysis::md_text(c.title) + "\n\n" + quote_block(c.quote) + ">\n> (seeds: " +
            analysis::md_text(c.seed_file) + ")\n\n";
    body += "**Setup.** " + analysis::md_text(c.setup) + " Experiments at this scale: ";
    for (size_t i = 0; i < experiments.size(); ++i)
      body += (i ? ", " : "") + std::string("`") + c.id + "/" + experiments[i].name + "`";
    body += ".\n\n**Criterion, fixed in `" + c.id + "/claim.json` before the runs.** " +
            analysis::md_text(c.criterion["text"].get<std::string>()) + "\n\n";
    if (!v.finding.numbers.empty()) body += v.finding.numbers + "\n";
    // Linked only where plot.py draws it (a series or a batch to show): a claim whose runs left no data linked the
    // figure of an earlier report, its old verdict in the title.
    const Json& fig = v.finding.figure;
    const auto some = [&](const char* key) { return fig.contains(key) && fig[key].is_array() && !fig[key].empty(); };
    if (fig.is_object() && (some("series") || some("batch")))
      body += "![" + c.id + "](figures/" + c.id + ".png)\n\n";
    std::string reason = v.finding.reason;
    if (!reason.empty() && reason[0] >= 'a' && reason[0] <= 'z') reason[0] = char(reason[0] - 'a' + 'A');
    body += "**Verdict: " + to_string(v.finding.verdict) + ".** " + analysis::md_text(reason) + "\n";
    claims_json.push_back({{"id", c.id}, {"title", c.title}, {"verdict", to_string(v.finding.verdict)},
                           {"reason", v.finding.reason}, {"figure", portable_numbers(v.finding.figure)}});
    out.push_back(std::move(v));
  }
  std::string md = "# dtbench reproduction report\n\n";
  md += "Each claim of the seeds (shared/seeds) with the experiment that tests it, the criterion written in its spec "
        "before the runs, the numbers from the run records, and the verdict. Scale: **" + scale + "**.\n"
        "Regenerate this file from the records with `dtbench reproduce --report-only --out DIR` (DIR: this folder; "
        "byte for byte), and the figures with `/usr/bin/python3 analysis/plot.py claims DIR`.\n\n";
  md += "Sessions that ran experiments in this folder:\n\n" + sessions_text(doc.value("sessions", Json::array())) + "\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& v : out) rows.push_back({v.id, v.title, "**" + to_string(v.finding.verdict) + "**"});
  md += md_table({"claim", "statement", "verdict"}, rows, {2}) + body;
  return {std::move(out), std::move(md),
          Json{{"kind", "dtbench-reproduction-report"}, {"scale", scale}, {"claims", claims_json}}};
}

}  // namespace

void check_report_inputs(const fs::path& dir, const std::set<std::string>& except) { make_report(dir, except); }

std::vector<ClaimVerdict> write_report(const fs::path& dir) {
  // Both files can be written before either is (a folder where report.json goes failed after REPORT.md was
  // replaced, exit 1; a FIFO there was replaced by a file; found by a hunt).
  check_output_file(dir / "REPORT.md", "the report");
  check_output_file(dir / "report.json", "the report");
  Report r = make_report(dir, {});
  write_file_atomic(dir / "REPORT.md", r.md, false);
  write_json_atomic(dir / "report.json", r.json, false);
  return std::move(r.verdicts);
}

std::string verdict_table(const std::vector<ClaimVerdict>& v) {
  std::string s;
  for (const auto& c : v) {
    std::string verdict = to_string(c.finding.verdict);
    s += c.id + "  " + verdict + std::string(14 - verdict.size(), ' ') + c.title + "\n     " + c.finding.reason + "\n";
  }
  return s;
}

}  // namespace dtbench::reproduce
