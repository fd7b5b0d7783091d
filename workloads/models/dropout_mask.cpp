#include "workloads/models/dropout_mask.hpp"

#include "core/rng.hpp"
#include "workloads/models/model_description.hpp"

namespace dtbench::models {

void dropout_keep_mask(uint64_t seed, const BatchPosition& at, float p, size_t samples, size_t per_sample,
                       uint8_t* mask) {
  for (size_t i = 0; i < samples; ++i) {
    Rng rng(seed, {kDropoutStream, at.step, at.first_sample + i});
    uint8_t* m = mask + i * per_sample;
    for (size_t j = 0; j < per_sample; ++j) m[j] = rng.uniform() >= double(p) ? 1 : 0;
  }
}

}  // namespace dtbench::models
