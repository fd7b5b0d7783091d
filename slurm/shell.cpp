#include "slurm/shell.hpp"


#include "core/error.hpp"

namespace dtbench::slurm {

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string slurm_folder_error(const std::filesystem::path& absolute, const std::string& option) {
  if (absolute.string().find('\\') == std::string::npos) return "";
  return option + ": a backslash in its path (" + absolute.string() + ") is not allowed: Slurm drops it from a "
         "job's output file names";
}

std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  for (size_t at; (at = text.find('\n')) != std::string::npos;) text.replace(at, 1, "; ");
  return text;
}

bool has_control_chars(std::string_view s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\t') || c == 0x7f) return true;
  return false;
}

std::string sbatch_quote(std::string_view s, std::string_view what) {
  for (char c : s)
    if (c == '\n' || c == '\r' || c == '\0')
      throw BadInput(std::string(what) + ": a line break or NUL cannot be passed on an #SBATCH line");
  if (s.find_first_of(" \t\\'\"#") == std::string_view::npos) return std::string(s);
  // Whitespace ends an argument even after a backslash, so the value goes in double quotes, where
  // '#', single quotes and blanks are literal; backslash and double quote keep a backslash.
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string sbatch_quote_path(std::string_view path) {
  // slurmstepd skips pattern expansion altogether when the name holds a backslash.
  bool expands = path.find('\\') == std::string_view::npos;
  std::string doubled;
  for (char c : path) {
    doubled += c;
    if (c == '%' && expands) doubled += '%';
  }
  return sbatch_quote(doubled, path);
}

std::string safe_name(std::string_view s, size_t max_len) {
  std::string out;
  for (char c : s) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                c == '_' || c == '+' || c == '-';
    if (keep) out += c;
    else if (out.empty() || out.back() != '_') out += '_';
  }
  while (!out.empty() && (out.front() == '.' || out.front() == '-')) out.erase(out.begin());
  if (out.size() > max_len) out.resize(max_len);
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty()) out.push_back('x');
  return out;
}

bool word_chars(std::string_view s, std::string_view extra) {
  for (const char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && extra.find(c) == std::string_view::npos) return false;
  }
  return true;
}

std::string display_word(const std::string& w) {
  return !w.empty() && word_chars(w, "_./=:,+@%-") ? w : shell_quote(w);
}

std::string display_line(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) {
    if (!s.empty()) s += ' ';
    s += display_word(w);
  }
  return s;
}

}  // namespace dtbench::slurm
