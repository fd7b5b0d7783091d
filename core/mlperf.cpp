#include "core/mlperf.hpp"

#include <cmath>

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
  // A record's provenance as its file holds it: a field of another type is passed over, never read as one.
  std::string processor = "unknown";
  const auto text = [](const Json& j, const char* key) -> const Json* {
    return j.is_object() && j.contains(key) && j[key].is_string() ? &j[key] : nullptr;
  };
  if (provenance.is_object()) {
    const Json* gpus = provenance.contains("cuda") ? &provenance["cuda"] : nullptr;
    const Json* backend = text(c, "backend");
    if (backend && *backend == "gpu" && gpus && gpus->is_object() && gpus->contains("devices") &&
        (*gpus)["devices"].is_array() && !(*gpus)["devices"].empty() && text((*gpus)["devices"][0], "name"))
      processor = (*gpus)["devices"][0]["name"].get<std::string>();
    else if (provenance.contains("cpu") && text(provenance["cpu"], "model"))
      processor = provenance["cpu"]["model"].get<std::string>();
  }
  return std::to_string(ranks) + "x" + processor;
}

int64_t warmup_steps_of_epochs(double epochs, int64_t steps_per_epoch) {
  return std::llround(epochs * static_cast<double>(steps_per_epoch));
}

}  // namespace dtbench
