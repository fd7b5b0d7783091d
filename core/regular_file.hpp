// Reading a whole input file, safely: only a regular file is read (a FIFO, a device such as /dev/zero or a
// folder is refused at once instead of blocking or growing without end), and its size must not exceed what
// the caller's format allows.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace dtbench {

// The contents of `path`. BadInput naming the path and `what` (e.g. "config", "data file") when it is
// missing, not a regular file, larger than max_bytes, or cannot be read.
std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes, const std::string& what);

// Whether something is at `path` (a file, a folder, a link to one): false when nothing is. BadInput naming the path
// and `what` (e.g. "run record") when the path cannot be examined (a loop of links, a folder without permission)
// or is a symbolic link to nothing, which a reader would take for "missing" and a writer cannot write through.
bool input_exists(const std::filesystem::path& path, const std::string& what);

}  // namespace dtbench
