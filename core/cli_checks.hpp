// Number checks for command-line options. CLI11's PositiveNumber and NonNegativeNumber name their range up to
// DBL_MAX written out in 300 digits ("Value 0 not in range 0.000000 to 179769313486..."); these say it in words:
// "--stop-at: must be greater than 0, got '0'".
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <string>

namespace dtbench::cli {

template <class Ok>
CLI::Validator number_check(Ok ok, const std::string& words, const std::string& name) {
  return CLI::Validator(
      [ok, words](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
        if (end != nullptr && *end == '\0' && std::isfinite(v) && ok(v)) return {};
        return "must be " + words + ", got '" + text + "'";
      },
      name);
}

inline const CLI::Validator positive = number_check([](double v) { return v > 0; }, "greater than 0", "POSITIVE");
inline const CLI::Validator non_negative = number_check([](double v) { return v >= 0; }, "0 or more", "NONNEGATIVE");

}  // namespace dtbench::cli
