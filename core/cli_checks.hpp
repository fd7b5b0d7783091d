// Number checks for command-line options. CLI11's PositiveNumber and NonNegativeNumber name their range up to
// DBL_MAX written out in 300 digits ("Value 0 not in range 0.000000 to 179769313486..."); these say it in words:
// "--stop-at: must be greater than 0, got '0'".
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace dtbench::cli {

// The first item that an earlier one repeats, or nullptr: a name given twice in a command-line list (a reducer timed
// twice, a table column twice, a claim run twice, a rank count predicted twice).
template <class T>
const T* first_repeated(const std::vector<T>& items) {
  for (auto it = items.begin(); it != items.end(); ++it)
    if (std::find(items.begin(), it, *it) != it) return &*it;
  return nullptr;
}

template <class Ok>
CLI::Validator number_check(Ok ok, const std::string& words, const std::string& name) {
  return CLI::Validator(
      [ok, words](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
        const bool number = end != nullptr && *end == '\0' && std::isfinite(v);
        if (number && ok(v)) return {};
        // "inf" or "abc" is no number at all ("must be 0 or more, got 'inf'"; a hunt).
        return (number ? "must be " + words : "must be a finite number (" + words + ")") + ", got '" + text + "'";
      },
      name);
}

inline const CLI::Validator positive = number_check([](double v) { return v > 0; }, "greater than 0", "POSITIVE");
inline const CLI::Validator non_negative = number_check([](double v) { return v >= 0; }, "0 or more", "NONNEGATIVE");
// A wait's limit in seconds: 0 for none, else whole seconds as the messages print them, at most 10^7 (116 days; a
// hunt's 1e300 was cast to a long, printed as -9223372036854775808, and 0.4 printed as "at most 0 s").
inline const CLI::Validator timeout_seconds = number_check(
    [](double v) { return v == 0 || (v >= 1 && v <= 1e7 && v == std::floor(v)); },
    "0 (no limit) or a whole number of seconds from 1 to 10000000", "WHOLE_SECONDS");

// A count of steps: decimal digits only, from 1 to 2^63 - 1 (CLI11 alone reads "0x1" as 1 and 2^63 as 2^63 - 1).
inline const CLI::Validator positive_count = CLI::Validator(
    [](std::string& text) -> std::string {
      if (text == "0") return "must be greater than 0, got '0'";
      long long v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || ec != std::errc() ||
          end != text.data() + text.size() || v < 1)
        return "must be a whole number from 1 to 2^63 - 1 in decimal digits, got '" + text + "'";
      return {};
    },
    "POSITIVE");

// An integer in decimal: CLI11 converts with strtoll's base 0, so "--ranks 010" was 8 ranks and "0x10" 16 (found by
// a hunt). A leading 0 before more characters is refused (a sign may come first); the conversion does the rest.
inline const CLI::Validator decimal_integer = CLI::Validator(
    [](std::string& text) -> std::string {
      const size_t at = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
      if (text.size() > at + 1 && text[at] == '0')
        return "must be a whole number in decimal digits without a leading 0, got '" + text + "'";
      if (!text.empty() && (std::isspace(static_cast<unsigned char>(text.front())) ||
                            std::isspace(static_cast<unsigned char>(text.back()))))  // ' 2' was 2, '2 ' refused
        return "must be a whole number in decimal digits, got '" + text + "'";
      return {};
    },
    "");

// A real number in decimal: [+-] digits [. digits] [e [+-] digits] (or .5). CLI11 converts with strtod, which also
// reads hexadecimal ("--timeout 0x1p4" waited 16 s), "inf", "nan" and leading spaces (found by a hunt).
inline const CLI::Validator decimal_number = CLI::Validator(
    [](std::string& text) -> std::string {
      size_t i = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
      const auto digits = [&] {
        const size_t from = i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
        return i - from;
      };
      size_t n = digits();
      if (i < text.size() && text[i] == '.') ++i, n += digits();
      bool ok = n > 0;
      if (ok && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        ++i;
        if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
        ok = digits() > 0;
      }
      if (ok && i == text.size()) return {};
      return "must be a number in decimal notation (as 0.5 or 2e-3), got '" + text + "'";
    },
    "");

// decimal_integer on every integer option of `app` and of its subcommands, at any depth (CLI11 names their types
// INT and UINT), and decimal_number on every real one (FLOAT); called once every command is added.
inline void require_decimal_integers(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    const std::string type = o->get_type_name();
    if (type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0) o->check(decimal_integer);
    if (type.rfind("FLOAT", 0) == 0) o->check(decimal_number);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) require_decimal_integers(*sub);
}

// A flag given twice is refused as an option given twice is ("--submit --submit" was taken as one, a script that
// built its command line from two sources said one thing twice without a word; found by a hunt). CLI11 keeps the
// last value of a flag (`--wait --wait=false` was no wait); this throws ArgumentMismatch on the second instead.
inline void refuse_repeated_flags(CLI::App& app) {
  for (CLI::Option* o : app.get_options())
    if (o->get_expected_max() == 0 && o != app.get_help_ptr() && o->get_name() != "--version")
      o->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) refuse_repeated_flags(*sub);
}

// The command line's rules on `app` and its subcommands, once every option is added: dtbench's own command line and
// the arguments a claim gives `dtbench allreduce` (which checked integers but took a flag twice; a review).
inline void apply_rules(CLI::App& app) {
  require_decimal_integers(app);
  refuse_repeated_flags(app);
}

// A file or folder name that, given, is not empty ("--trace ''" was taken for no --trace at all).
inline const CLI::Validator non_empty = CLI::Validator(
    [](std::string& text) -> std::string { return text.empty() ? "must not be empty" : ""; }, "PATH");
// The same for a value that is no path (--help said "TEXT:PATH" for a list of layer widths).
inline const CLI::Validator non_empty_value = CLI::Validator(
    [](std::string& text) -> std::string { return text.empty() ? "must not be empty" : ""; }, "");

}  // namespace dtbench::cli
