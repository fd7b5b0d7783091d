#include "analysis/text_table.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <string_view>

#include "core/error.hpp"

namespace dtbench::analysis {
namespace {

// Markdown (CommonMark with GitHub's tables) as literal text: a run name or a config value must not become a cell
// border, emphasis, code, a link, an HTML tag, an entity, strikethrough or GitHub's math. Escaped with a backslash:
// | \ ` * ~ $; < unless a space or = follows (a tag, a comment, an autolink, an e-mail autolink; "<= 0.01" stays);
// _ where it could open or close emphasis (not between two letters or digits, so parameter_server stays as typed);
// ] before ( (an inline link or image; "[1][2]" is a link only where a definition of [2] exists, and one is escaped
// at a line's start); & before a letter, digit or # (an entity). At the start of a line (the caption, a note after
// "- "), a character that would start a block (a heading, a quote, a list, a task box, a definition) is escaped
// too, after the spaces before it are dropped. Line breaks become spaces (CommonMark ends a line at a bare CR too).
std::string md_cell(const std::string& text, bool line_start = false) {
  // Spaces before a paragraph's text are dropped by Markdown, and four of them start a code block: dropped here,
  // so that the checks below see what would start the line.
  const std::string s = line_start ? text.substr(std::min(text.find_first_not_of(" \t"), text.size())) : text;
  const auto word = [&](size_t i) { return i < s.size() && std::isalnum(static_cast<unsigned char>(s[i])) != 0; };
  std::string out;
  size_t from = 0;
  if (line_start && !s.empty()) {
    size_t digits = 0;
    while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
    // GitHub's task boxes ("- [ ] ", "- [x] ") and link reference definitions ("[2]: url"); a reference mark as in
    // "[1] Goyal et al." stays.
    const size_t close = s.find(']');
    const bool box_or_definition =
        s[0] == '[' && close != std::string::npos &&
        ((close == 2 && std::string_view(" xX").find(s[1]) != std::string_view::npos) || s.compare(close, 2, "]:") == 0);
    if (std::string_view("#>+-=").find(s[0]) != std::string_view::npos || box_or_definition) {
      out.append("\\").push_back(s[0]);
      from = 1;
    } else if (digits > 0 && digits < s.size() && (s[digits] == '.' || s[digits] == ')')) {
      out.append(s, 0, digits).append("\\").push_back(s[digits]);
      from = digits + 1;
    }
  }
  for (size_t i = from; i < s.size(); ++i) {
    const char c = s[i];
    const char next = i + 1 < s.size() ? s[i + 1] : '\0';
    bool escape = std::string_view("|\\`*~$").find(c) != std::string_view::npos;
    if (c == '<') escape = next != '\0' && next != '=' && !std::isspace(static_cast<unsigned char>(next));
    if (c == '_') escape = !(i > 0 && word(i - 1) && word(i + 1));
    if (c == ']') escape = next == '(';
    if (c == '&') escape = next == '#' || word(i + 1);
    if (c == '\n' || c == '\r') {
      out += ' ';
      continue;
    }
    if (escape) out += '\\';
    out += c;
  }
  return out;
}

// A decimal number as the tables write one: [+-] digits [. digits] [e [+-] digits], or inf and nan with a sign
// (format_number). Not strtod, which also reads hexadecimal, "infinity", "nan(...)" and leading spaces.
bool plain_number(const std::string& s) {
  size_t i = s.empty() || (s[0] != '+' && s[0] != '-') ? 0 : 1;
  if (s.compare(i, std::string::npos, "inf") == 0 || s.compare(i, std::string::npos, "nan") == 0) return true;
  const auto digits = [&] {
    const size_t from = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i - from;
  };
  size_t n = digits();
  if (i < s.size() && s[i] == '.') ++i, n += digits();
  if (n == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

// CSV as RFC 4180 quotes it; and a cell that a spreadsheet would run as a formula (one starting with = + - @, a tab
// or a CR, OWASP's "CSV injection") gets a leading apostrophe, unless it is a number (-0.5 and -inf stay numbers)
// or that one character (the tables' "-" for no value).
std::string csv_cell(const std::string& s) {
  std::string cell = s;
  if (s.size() > 1 && std::string_view("=+-@\t\r").find(s[0]) != std::string_view::npos && !plain_number(s))
    cell.insert(cell.begin(), '\'');
  if (cell.find_first_of(",\"\n\r") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += "\"\"";
    else out += c;
  }
  return out + "\"";
}

// LaTeX text: its special characters escaped, and the characters the default T1/OT1 text fonts print as others (<
// as an inverted exclamation mark, | as a dash) as their text commands. A cell that starts with [ or * gets {}
// first: after \\ or \midrule, LaTeX reads a [ as the start of their optional argument and \\* as the starred
// form, which ate the * (found by hunts). The fonts' ligatures (-- and --- as dashes, `` and '' as curly quotes, ?`
// and !` as inverted marks, ,, as a low quote) are broken with {} between the two characters, and a control
// character, which stops LaTeX ("Unicode character ^^A not set up"), is written as its code, \x01.
std::string latex_text(const std::string& s) {
  std::string out = !s.empty() && (s[0] == '[' || s[0] == '*') ? "{}" : "";
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    const char next = i + 1 < s.size() ? s[i + 1] : '\0';
    const bool ligature = (next == '-' && c == '-') || (next == '`' && (c == '`' || c == '?' || c == '!')) ||
                          (next == '\'' && c == '\'') || (next == ',' && c == ',');
    if (ligature) {
      out += c;
      out += "{}";
      continue;
    }
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == '\x7f') {
      char code[8];
      std::snprintf(code, sizeof code, "x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out.append("\\textbackslash{}").append(code);
      continue;
    }
    switch (c) {
      case '&': case '%': case '$': case '#': case '_': case '{': case '}': out += '\\'; out += c; break;
      case '~': out += "\\textasciitilde{}"; break;
      case '^': out += "\\textasciicircum{}"; break;
      case '\\': out += "\\textbackslash{}"; break;
      case '<': out += "\\textless{}"; break;
      case '>': out += "\\textgreater{}"; break;
      case '|': out += "\\textbar{}"; break;
      case '\n': case '\r': case '\t': out += ' '; break;
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

std::string md_text(const std::string& s, bool line_start) { return md_cell(s, line_start); }

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

std::string exact_number(double v) {
  if (!std::isfinite(v)) return format_number(v);
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // the shortest text that reads back as v
  return ec == std::errc() ? std::string(buf, end) : format_number(v);
}

std::string fixed_text(double v, int digits) {
  const int n = std::snprintf(nullptr, 0, "%.*f", digits, v);
  std::string out(static_cast<size_t>(std::max(n, 0)) + 1, '\0');
  std::snprintf(out.data(), out.size(), "%.*f", digits, v);
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

std::string render(const TextTable& t, Format f) {
  std::string out;
  size_t cols = t.header.size();
  auto right = [&](size_t c) { return c < t.right.size() && t.right[c]; };
  auto md = [&](size_t c, const std::string& s) { return c < t.markdown.size() && t.markdown[c] ? s : md_cell(s); };
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
    if (!t.caption.empty()) out += md_cell(t.caption, true) + "\n\n";
    out += "|";
    for (const auto& h : t.header) out.append(" ").append(md_cell(h)).append(" |");
    out += "\n|";
    for (size_t c = 0; c < cols; ++c) out += right(c) ? " ---: |" : " --- |";
    out += "\n";
    for (const auto& row : t.rows) {
      out += "|";
      for (size_t c = 0; c < cols; ++c) out.append(" ").append(md(c, c < row.size() ? row[c] : "")).append(" |");
      out += "\n";
    }
    if (!t.notes.empty()) {
      out += "\n";
      for (const auto& n : t.notes) out.append("- ").append(md_cell(n, true)).append("\n");
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

namespace {

std::string cell_text(const Json& v, bool exact) {
  if (v.is_null()) return "-";
  if (v.is_string()) {
    // A text that reads as a JSON value ("0", "true", "\"0\"") or as a missing key ("-") keeps its quotes: a row
    // keyed by the string "0" and one keyed by the number 0 are two rows and must not look like one.
    const std::string t = v.get<std::string>();
    return t == "-" || !Json::parse(t, nullptr, false).is_discarded() ? v.dump() : t;
  }
  if (v.is_number_float()) {
    // A key cell names its row: rounded to 4 digits, momenta 0.99995 and 0.99999 were two rows labelled "1" (a
    // hunt). The short form only where it reads back as the same number, else the value's shortest exact text.
    const double x = v.get<double>();
    const std::string text = format_number(x);
    return !exact || !std::isfinite(x) || std::strtod(text.c_str(), nullptr) == x ? text : v.dump();
  }
  if (v.is_object() && v.contains("name") && v["name"].is_string()) {
    // A section given whole, e.g. an optimizer: "sgd lr=0.1 momentum=0.9".
    std::string s = v["name"].get<std::string>();
    for (auto it = v.begin(); it != v.end(); ++it)
      if (it.key() != "name") s.append(" ").append(it.key()).append("=").append(cell_text(it.value(), exact));
    return s;
  }
  return v.dump();
}

}  // namespace

std::string json_cell(const Json& v) { return cell_text(v, false); }

std::string key_cell(const Json& v) { return cell_text(v, true); }

}  // namespace dtbench::analysis
