#include "analysis/published.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "analysis/summary.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/published_dir.hpp"

namespace dtbench::analysis {
namespace fs = std::filesystem;
namespace {

constexpr const char* kKind = "dtbench-published-table";
const std::set<std::string> kStats = {"mean", "min", "max", "median", "count"};
constexpr int64_t kMaxDigits = 17;  // a double's decimals: more print noise

// 8192 -> "8,192".
std::string with_commas(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

std::string number_text(double v, int digits, bool commas) {
  if (digits >= 0) return fixed_text(v, digits);
  if (std::floor(v) == v && std::fabs(v) < 1e15)
    return commas ? with_commas(static_cast<int64_t>(v)) : std::to_string(static_cast<int64_t>(v));
  return format_number(v);
}

std::string cell_text(const Json& v, const Json& column, bool commas) {
  int digits = column.value("digits", -1);
  if (column.contains("stat")) {
    if (!v.is_array()) return "";
    std::vector<double> xs;
    for (const auto& x : v) xs.push_back(x.get<double>());
    auto s = summarize(xs);
    if (!s) return "";
    std::string stat = column["stat"].get<std::string>();
    double mean = 0;
    for (double x : xs) mean += x;
    mean /= double(xs.size());
    if (std::isinf(mean)) {  // a sum of finite figures near DBL_MAX overflowed (found by a hunt): divide each first
      mean = 0;
      for (double x : xs) mean += x / double(xs.size());
    }
    double out = stat == "mean" ? mean : stat == "min" ? s->min : stat == "max" ? s->max
                 : stat == "median" ? s->median : double(s->n);
    return number_text(out, stat == "count" ? -1 : digits, commas);
  }
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return number_text(v.get<double>(), digits, commas);
  return v.dump();
}

bool is_published_table(const fs::path& p) {
  try {
    const Json doc = read_json_file(p.string(), "published table");
    return doc.is_object() && doc.value("kind", Json()) == kKind;
  } catch (const BadInput&) {
    return false;
  }
}

[[noreturn]] void fail(const std::string& ptr, const std::string& msg) { throw BadInput(ptr + ": " + msg); }

}  // namespace

std::vector<std::string> published_names() {
  std::vector<std::string> names;
  std::error_code ec;
  // The folder also holds the cost model's profiles (networks.json, compute.json): list tables only.
  for (const auto& e : fs::directory_iterator(published_dir(), ec))
    if (e.path().extension() == ".json" && is_published_table(e.path())) names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

fs::path published_file(const std::string& name_or_path) {
  const fs::path p = name_or_path;
  const bool is_path = name_or_path.find('/') != std::string::npos || p.extension() == ".json";
  return is_path ? p : published_dir() / (name_or_path + ".json");
}

Json load_published(const std::string& name_or_path) {
  const fs::path p = published_file(name_or_path);
  const bool is_path = p == fs::path(name_or_path);
  if (!fs::exists(p)) {
    std::string names;
    for (const auto& n : published_names()) names += (names.empty() ? "" : ", ") + n;
    std::error_code ec;
    const bool folder = fs::is_directory(published_dir(), ec);  // a DTBENCH_PUBLISHED_DIR that is not there said ": "
    throw BadInput("--published " + name_or_path + ": no such table" +
                   (is_path  ? std::string()
                    : folder ? "; tables in " + published_dir().string() + ": " + names
                             : "; the folder of published tables, " + published_dir().string() +
                                   " (DTBENCH_PUBLISHED_DIR, or results/published), is not there"));
  }
  const Json doc = read_json_file(p.string(), "published table");
  try {
    check_published(doc);
  } catch (const BadInput& e) {
    throw BadInput(p.string() + ": " + e.what());
  }
  return doc;
}

void check_published(const Json& doc) {
  JsonFields f(doc, "");
  f.only({"kind", "title", "description", "columns", "rows", "references", "notes"});
  if (f.string("kind") != kKind) throw_wrong_type(f.pointer("kind"), std::string("\"") + kKind + "\"", f.at("kind"));
  f.string("title");
  if (f.has("description")) f.string("description");
  if (f.has("notes")) f.strings("notes");
  std::set<std::string> references;
  if (f.has("references")) {
    const JsonFields refs = f.fields("references");
    for (const auto& ref : f.object("references").items()) {
      refs.string(ref.key());  // the citation
      references.insert(ref.key());
    }
  }
  const std::vector<JsonFields> columns = f.items("columns");
  if (columns.empty()) fail("/columns", "expected a non-empty list");
  std::vector<std::pair<std::string, bool>> keys;  // each column's key, and whether it summarises a list
  std::set<std::string> numeric;                  // columns printed with `digits`: numbers only
  for (const JsonFields& c : columns) {
    c.only({"key", "label", "stat", "digits", "align"});
    c.string("label");
    if (c.has("stat") && !kStats.count(c.string("stat")))
      fail(c.pointer("stat"), "expected one of \"mean\", \"min\", \"max\", \"median\", \"count\"");
    if (c.has("digits")) c.integer("digits", 0, kMaxDigits);
    if (c.has("align") && c.string("align") != "left" && c.string("align") != "right")
      fail(c.pointer("align"), "expected \"left\" or \"right\"");
    keys.emplace_back(c.string("key"), c.has("stat"));
    if (c.has("digits")) numeric.insert(c.string("key"));
  }
  for (const JsonFields& r : f.items("rows")) {
    for (const auto& [key, stat] : keys) {
      if (!r.has(key)) continue;
      const Json& v = r.at(key);
      if (stat && (!v.is_array() || v.empty() || !std::all_of(v.begin(), v.end(), [](const Json& x) { return x.is_number(); })))
        fail(r.pointer(key), "expected a non-empty list of numbers");
      if (!stat && !v.is_string() && !v.is_number() && !v.is_null()) throw_wrong_type(r.pointer(key), "a text or a number", v);
      // A column printed with `digits` holds numbers: a text there was printed as it was (found by a hunt).
      if (!stat && numeric.count(key) && v.is_string()) throw_wrong_type(r.pointer(key), "a number (the column has digits)", v);
    }
    if (r.has("refs"))
      for (const auto& ref : r.strings("refs"))
        if (!references.count(ref)) fail(r.pointer("refs"), "unknown reference \"" + ref + "\" (not in /references)");
  }
}

TextTable published_table(const Json& doc, Format format) {
  bool commas = format != Format::csv;  // CSV is for programs: plain 8192, not 8,192
  TextTable t;
  t.caption = doc["title"].get<std::string>();
  // References are numbered in order of first use.
  std::vector<std::string> order;
  for (const auto& r : doc["rows"])
    for (const auto& ref : r.value("refs", Json::array()))
      if (std::find(order.begin(), order.end(), ref.get<std::string>()) == order.end()) order.push_back(ref.get<std::string>());
  for (const auto& c : doc["columns"]) {
    t.header.push_back(c["label"].get<std::string>());
    t.right.push_back(c.value("align", "") == "right");
  }
  bool sources = !order.empty();
  if (sources) {
    t.header.push_back("Source");
    t.right.push_back(false);
  }
  for (const auto& r : doc["rows"]) {
    std::vector<std::string> cells;
    for (const auto& c : doc["columns"]) {
      const std::string key = c["key"].get<std::string>();
      cells.push_back(cell_text(r.contains(key) ? r[key] : Json(), c, commas));
    }
    if (sources) {
      std::string s;
      for (const auto& ref : r.value("refs", Json::array()))
        s.append("[")
            .append(std::to_string(std::find(order.begin(), order.end(), ref.get<std::string>()) - order.begin() + 1))
            .append("]");
      cells.push_back(s);
    }
    t.rows.push_back(std::move(cells));
  }
  for (const auto& n : doc.value("notes", Json::array())) t.notes.push_back(n.get<std::string>());
  for (size_t i = 0; i < order.size(); ++i)
    t.notes.push_back(std::string("[").append(std::to_string(i + 1)).append("] ").append(doc["references"][order[i]].get<std::string>()));
  return t;
}

}  // namespace dtbench::analysis
