// Quoting: shell_quote is checked against bash itself (the reference for what a word means), and
// sbatch_quote against the escaping rules of sbatch's #SBATCH parser (src/sbatch/opt.c,
// _get_argument); the Slurm end-to-end test submits such a line to a real sbatch.
#include <gtest/gtest.h>

#include <cctype>

#include "core/error.hpp"
#include "slurm/process.hpp"
#include "slurm/shell.hpp"

using namespace dtbench::slurm;

namespace {

// What bash makes of `printf '%s\0' WORD`: the bytes of the word as bash sees it.
std::string through_bash(const std::string& word) {
  ProcessResult r = run_capture({"/bin/bash", "-c", "printf '%s\\0' " + word});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

const std::vector<std::string> kNasty = {
    "",  "plain", "two words", "it's", "\"double\"", "$(touch pwned)", "`touch pwned`", "${HOME}", "$HOME",
    "a;b|c&d", "<in >out", "*", "?", "[ab]", "~", "#comment", "back\\slash", "line\nbreak", "tab\there",
    "'; rm -rf / #", "\\'", "ünïcødé", "!!", "a\"b'c$d`e\\f",
};

}  // namespace

TEST(ShellQuote, BashReadsBackEveryByte) {
  for (const auto& s : kNasty) EXPECT_EQ(through_bash(shell_quote(s)), s + std::string(1, '\0')) << "input: " << s;
}

TEST(ShellQuote, ManyWordsStaySeparate) {
  std::string line;
  std::string expected;
  for (const auto& s : kNasty) {
    line.append(" ").append(shell_quote(s));
    expected.append(s).push_back('\0');
  }
  std::string command = "printf '%s\\0'";
  command += line;
  ProcessResult r = run_capture({"/bin/bash", "-c", command});
  EXPECT_EQ(r.out, expected);
}

// get_argument (src/sbatch/opt.c, Slurm 22.05) applied to one quoted value: the reference for what
// sbatch reads, transcribed so the unit test needs no Slurm (the cluster test submits real jobs).
std::string sbatch_reads(const std::string& line) {
  std::string arg;
  bool escape = false, quoted = false;
  char q = 0;
  for (size_t i = 0; i < line.size() && (quoted || !std::isspace(static_cast<unsigned char>(line[i]))); ++i) {
    char c = line[i];
    if (escape) escape = false;
    else if (c == '\\') { escape = true; continue; }
    else if (quoted) { if (c == q) { quoted = false; continue; } }
    else if (c == '"' || c == '\'') { quoted = true; q = c; continue; }
    else if (c == '#') break;
    arg += c;
  }
  return arg;
}

TEST(SbatchQuote, SbatchReadsBackTheValue) {
  EXPECT_EQ(sbatch_quote("plain-name_1.2", "x"), "plain-name_1.2");
  EXPECT_EQ(sbatch_quote("a b", "x"), "\"a b\"");
  EXPECT_EQ(sbatch_quote("a#b", "x"), "\"a#b\"");
  EXPECT_EQ(sbatch_quote("it's \"q\"", "x"), "\"it's \\\"q\\\"\"");
  EXPECT_EQ(sbatch_quote("back\\slash", "x"), "\"back\\\\slash\"");
  EXPECT_EQ(sbatch_quote("$(x);|&", "x"), "$(x);|&");  // sbatch does not interpret these
  for (const auto& s : kNasty) {
    if (has_control_chars(s)) continue;
    EXPECT_EQ(sbatch_reads(sbatch_quote(s, "x") + " trailing"), s) << s;
  }
  EXPECT_THROW(sbatch_quote("line\nbreak", "/name"), dtbench::BadInput);
  try {
    sbatch_quote("a\rb", "/name");
    FAIL();
  } catch (const dtbench::BadInput& e) {
    EXPECT_STREQ(e.what(), "/name: a line break or NUL cannot be passed on an #SBATCH line");
  }
}

TEST(SbatchQuote, PathsDoublePercentUnlessABackslashTurnsPatternsOff) {
  EXPECT_EQ(sbatch_quote_path("/r/100%/x.out"), "/r/100%%/x.out");
  EXPECT_EQ(sbatch_quote_path("/r/my runs/x.out"), "\"/r/my runs/x.out\"");
  EXPECT_EQ(sbatch_quote_path("/r/a\\b%/x"), "\"/r/a\\\\b%/x\"");
}

TEST(SafeName, KeepsOnlyFileSafeCharacters) {
  EXPECT_EQ(safe_name("ring", 24), "ring");
  EXPECT_EQ(safe_name("../../etc/passwd", 64), "_.._etc_passwd");
  EXPECT_EQ(safe_name("a b;c$(d)", 64), "a_b_c_d");
  EXPECT_EQ(safe_name("-rf", 64), "rf");
  EXPECT_EQ(safe_name(".hidden", 64), "hidden");
  EXPECT_EQ(safe_name("", 64), "x");
  EXPECT_EQ(safe_name("///", 64), "x");
  EXPECT_EQ(safe_name("abcdefgh", 4), "abcd");
  for (const auto& s : kNasty) {
    std::string n = safe_name(s, 24);
    EXPECT_FALSE(n.empty());
    EXPECT_EQ(n.find('/'), std::string::npos);
    EXPECT_NE(n, "..");
    EXPECT_NE(n.front(), '-');
    EXPECT_NE(n.front(), '.');
  }
}

TEST(ControlChars, TabIsAllowedLineBreaksAreNot) {
  EXPECT_FALSE(has_control_chars("a\tb"));
  EXPECT_TRUE(has_control_chars("a\nb"));
  EXPECT_TRUE(has_control_chars("a\rb"));
  EXPECT_TRUE(has_control_chars(std::string("a\0b", 3)));
  EXPECT_FALSE(has_control_chars("ünïcødé"));
}
