// bf16 on the cpu backend needs AVX-512: oneDNN 2.6 builds no bf16 primitive on an AVX2-only CPU. A test of bf16
// numerics skips there, saying so (the training path refuses such a config: train's bad_input check).
#pragma once

#include <gtest/gtest.h>

#include "core/provenance.hpp"

#define DTBENCH_SKIP_WITHOUT_BF16()                                                                         \
  if (!::dtbench::cpu_has_bf16_primitives())                                                                \
  GTEST_SKIP() << "this CPU's oneDNN instruction set is " << ::dtbench::cpu_isa()                           \
               << ": no bf16 primitives (oneDNN builds them on avx512_core and newer); bf16 is not tested here"
