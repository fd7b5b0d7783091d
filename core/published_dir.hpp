// The folder of published data: results/published in the source tree, or $DTBENCH_PUBLISHED_DIR.
// It holds the seeds' tables (analysis/published.hpp) and the cost model's network and compute
// profiles (reducers/profiles.hpp).
#pragma once

#include <cstdlib>
#include <filesystem>

namespace dtbench {

inline std::filesystem::path published_dir() {
  if (const char* d = std::getenv("DTBENCH_PUBLISHED_DIR")) return d;
  return DTBENCH_PUBLISHED_DIR;
}

}  // namespace dtbench
