#include "workloads/gpu/precision.hpp"

#include "core/error.hpp"

namespace dtbench::gpu {

Precision parse_precision(const std::string& text, const std::string& key) {
  if (text == "fp32") return Precision::fp32;
  if (text == "bf16") return Precision::bf16;
  if (text == "fp16") return Precision::fp16;
  throw BadInput(key + ": precision '" + text + "' is unknown (expected fp32, bf16 or fp16)");
}

std::string to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "unknown";
}

}  // namespace dtbench::gpu
