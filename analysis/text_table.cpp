#include "analysis/text_table.hpp"

#include <cmath>
#include <cstdio>

#include "core/error.hpp"

namespace dtbench::analysis {
namespace {

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';  // CommonMark ends a line at a bare CR too
    else out += c;
  }
  return out;
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += "\"\"";
    else out += c;
  }
  return out + "\"";
}

std::string latex_text(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    switch (c) {
      case '&': case '%': case '$': case '#': case '_': case '{': case '}': out += '\\'; out += c; break;
      case '~': out += "\\textasciitilde{}"; break;
      case '^': out += "\\textasciicircum{}"; break;
      case '\\': out += "\\textbackslash{}"; break;
      case '\n': case '\r': out += ' '; break;
      default:
        // UTF-8 arrows and multiplication signs in published tables.
        if (s.compare(i, 3, "\u2192") == 0) out += "$\\rightarrow$", i += 2;
        else if (s.compare(i, 2, "\u00d7") == 0) out += "$\\times$", i += 1;
        else out += c;
    }
  }
  return out;
}

}  // namespace

Format parse_format(const std::string& name) {
  if (name == "md" || name == "markdown") return Format::md;
  if (name == "csv") return Format::csv;
  if (name == "latex" || name == "tex") return Format::latex;
  throw BadInput("--format: expected one of \"md\", \"csv\", \"latex\", got \"" + name + "\"");
}

std::string format_number(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  char buf[64];
  double a = std::fabs(v);
  if (a >= 1e4 && a < 1e7) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string render(const TextTable& t, Format f) {
  std::string out;
  size_t cols = t.header.size();
  auto right = [&](size_t c) { return c < t.right.size() && t.right[c]; };
  if (f == Format::csv) {
    for (size_t c = 0; c < cols; ++c) {
      if (c) out += ',';
      out += csv_cell(t.header[c]);
    }
    out += "\r\n";
    for (const auto& row : t.rows) {
      for (size_t c = 0; c < cols; ++c) {
        if (c) out += ',';
        out += csv_cell(c < row.size() ? row[c] : "");
      }
      out += "\r\n";
    }
    return out;
  }
  if (f == Format::md) {
    if (!t.caption.empty()) out += md_cell(t.caption) + "\n\n";
    out += "|";
    for (const auto& h : t.header) out.append(" ").append(md_cell(h)).append(" |");
    out += "\n|";
    for (size_t c = 0; c < cols; ++c) out += right(c) ? " ---: |" : " --- |";
    out += "\n";
    for (const auto& row : t.rows) {
      out += "|";
      for (size_t c = 0; c < cols; ++c) out.append(" ").append(md_cell(c < row.size() ? row[c] : "")).append(" |");
      out += "\n";
    }
    if (!t.notes.empty()) {
      out += "\n";
      for (const auto& n : t.notes) out.append("- ").append(md_cell(n)).append("\n");
    }
    return out;
  }
  out += "\\begin{table}[ht]\n\\centering\n";
  if (!t.caption.empty()) out.append("\\caption{").append(latex_text(t.caption)).append("}\n");
  out += "\\begin{tabular}{";
  for (size_t c = 0; c < cols; ++c) out += right(c) ? "r" : "l";
  out += "}\n\\toprule\n";
  for (size_t c = 0; c < cols; ++c) out.append(c ? " & " : "").append(latex_text(t.header[c]));
  out += " \\\\\n\\midrule\n";
  for (const auto& row : t.rows) {
    for (size_t c = 0; c < cols; ++c) out.append(c ? " & " : "").append(latex_text(c < row.size() ? row[c] : ""));
    out += " \\\\\n";
  }
  out += "\\bottomrule\n\\end{tabular}\n";
  if (!t.notes.empty()) {
    out += "\\par\\smallskip\\footnotesize\n";
    for (const auto& n : t.notes) out.append(latex_text(n)).append("\\\\\n");
  }
  out += "\\end{table}\n";
  return out;
}

std::string json_cell(const Json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) {
    // A text that reads as a JSON value ("0", "true", "\"0\"") or as a missing key ("-") keeps its quotes: a row
    // keyed by the string "0" and one keyed by the number 0 are two rows and must not look like one.
    const std::string t = v.get<std::string>();
    return t == "-" || !Json::parse(t, nullptr, false).is_discarded() ? v.dump() : t;
  }
  if (v.is_number_float()) return format_number(v.get<double>());
  if (v.is_object() && v.contains("name") && v["name"].is_string()) {
    // A section given whole, e.g. an optimizer: "sgd lr=0.1 momentum=0.9".
    std::string s = v["name"].get<std::string>();
    for (auto it = v.begin(); it != v.end(); ++it)
      if (it.key() != "name") s.append(" ").append(it.key()).append("=").append(json_cell(it.value()));
    return s;
  }
  return v.dump();
}

}  // namespace dtbench::analysis
