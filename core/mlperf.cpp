#include "core/mlperf.hpp"

namespace dtbench {

std::string mlperf_benchmark(const Json& c) {
  if (c.contains("mllog") && c["mllog"].is_object()) {
    const std::string given = c["mllog"].value("submission_benchmark", std::string());
    if (!given.empty()) return given;
  }
  const std::string arch = c.contains("model") ? c["model"].value("arch", std::string()) : std::string();
  return arch.rfind("resnet", 0) == 0 ? "resnet" : arch;
}

}  // namespace dtbench
