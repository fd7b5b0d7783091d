// Quoting for the two interpreters a generated sbatch script meets: bash (the script body) and
// sbatch's own parser of "#SBATCH" lines. Names and values from specs only ever reach a script
// through these functions, so shell metacharacters arrive literally.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace dtbench::slurm {

// One bash word that expands to exactly `s`: single quotes, each ' written as '\'' .
// Bytes pass through unchanged, newlines included.
std::string shell_quote(std::string_view s);

// One argument of an "#SBATCH --opt=VALUE" line that sbatch reads back as exactly `s`. sbatch
// splits #SBATCH lines itself (get_argument in src/sbatch/opt.c): whitespace ends an argument (even
// after a backslash), quotes group, a backslash escapes the next character, and an unquoted '#'
// starts a comment. A value holding any of these goes in double quotes with '\' and '"'
// backslash-escaped; others pass unchanged. Throws BadInput for what cannot be carried on one line
// (newline, carriage return, NUL).
std::string sbatch_quote(std::string_view s, std::string_view what);

// A path for --output/--error: sbatch_quote after doubling '%' (which sbatch would otherwise
// expand as a file-name pattern such as %j) unless the path
// holds a backslash, which turns expansion off.
std::string sbatch_quote_path(std::string_view path);

// Reduces `s` to a file and job name: letters, digits, '.', '_', '+', '-' kept, runs of anything
// else become one '_', at most `max_len` characters, never empty, never starting with '.' or '-'.
std::string safe_name(std::string_view s, size_t max_len);

// A word as a reader could paste it into a shell: shell_quote only when it needs to be; and a command line of them.
std::string display_word(const std::string& w);
std::string display_line(const std::vector<std::string>& words);

// True when `s` holds a control character other than tab (names, #SBATCH values and setup lines
// must fit on one line).
bool has_control_chars(std::string_view s);

// Whether `s` is made of ASCII letters, digits and the characters of `extra` only ("" passes). A loop, not
// std::regex: libstdc++'s matcher recurses once per character, and a 30,000-character Slurm name overflowed the stack.
bool word_chars(std::string_view s, std::string_view extra);
// Whether `s` is `sep`-separated parts (one at least), each non-empty and passing `part`.
template <class Part>
bool parts(std::string_view s, char sep, const Part& part) {
  for (size_t a = 0;;) {
    const size_t b = std::min(s.find(sep, a), s.size());
    if (b == a || !part(s.substr(a, b - a))) return false;
    if (b == s.size()) return true;
    a = b + 1;
  }
}

// A program's message on one line: its lines joined with "; ", trailing blanks dropped (sbatch's errors are two).
std::string one_line(std::string text);

// Empty, or why a campaign folder cannot hold a Slurm job's files: Slurm drops a backslash from the #SBATCH
// --output and --error paths (the job failed to start, or wrote its logs outside the folder). `option` names it.
std::string slurm_folder_error(const std::filesystem::path& absolute, const std::string& option);
// The longest campaign name (sweep and pbt specs' /name): each job's name is the campaign's, '/' and its run's (at
// most about 170 bytes), and Slurm 22.05's sbatch refuses job names above 1024 bytes ("Pathname ... too long", found
// on the local cluster), which a 5000-byte name met only at --submit, after the campaign was written.
inline constexpr size_t kMaxCampaignNameBytes = 512;

}  // namespace dtbench::slurm
