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

std::string mlperf_platform(const Json& c, int ranks, const Json& provenance) {
  if (c.contains("mllog") && c["mllog"].is_object()) {
    const std::string given = c["mllog"].value("submission_platform", std::string());
    if (!given.empty()) return given;
  }
  std::string processor = "unknown";
  if (provenance.is_object()) {
    const Json* gpus = provenance.contains("cuda") ? &provenance["cuda"] : nullptr;
    if (c.value("backend", std::string()) == "gpu" && gpus && gpus->contains("devices") &&
        !(*gpus)["devices"].empty())
      processor = (*gpus)["devices"][0].value("name", processor);
    else if (provenance.contains("cpu"))
      processor = provenance["cpu"].value("model", processor);
  }
  return std::to_string(ranks) + "x" + processor;
}

}  // namespace dtbench
