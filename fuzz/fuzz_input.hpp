// What every fuzz target shares: the parts of its input, a scratch folder, and the rule that bad input is a
// normal outcome.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace dtbench::fuzz {

// An input that holds several files or arguments separates them by this line; no JSON text contains it (a
// string holds no raw line break, and "--" is no JSON token).
inline constexpr char kSeparator[] = "\n----\n";

// The input's parts (at least one), at most `max_parts`: the last part keeps any further separators.
std::vector<std::string> split(const uint8_t* data, size_t size, size_t max_parts);

// An empty folder of this process's own under the system's temporary folder, made on first use and removed
// at exit; the only place a fuzz target writes.
const std::filesystem::path& scratch();

// Runs `f`. An Error with the bad-input code (core/error.hpp: the command would exit 2 with its message) is a
// normal outcome and returns; any other exception escapes, and libFuzzer reports it as a crash: on this input
// the command would exit 1, "internal error", though the input is at fault.
template <class F>
void bad_input_is_fine(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.code() != ExitCode::bad_input) throw;
  }
}

}  // namespace dtbench::fuzz
