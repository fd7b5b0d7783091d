// Compute precisions of the GPU backend. Master weights, their gradients, batch-norm parameters and
// statistics, the logits and the loss are fp32 in every precision; activations, the working copy of the
// conv and fc weights, and conv weight gradients are in the compute precision.
#pragma once

#include <cstddef>
#include <string>

namespace dtbench::gpu {

enum class Precision { fp32, bf16, fp16 };

// "fp32", "bf16" or "fp16"; BadInput naming `key` otherwise.
Precision parse_precision(const std::string& text, const std::string& key);
std::string to_string(Precision p);
inline size_t element_size(Precision p) { return p == Precision::fp32 ? 4 : 2; }

}  // namespace dtbench::gpu
