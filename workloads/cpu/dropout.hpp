// Inverted dropout (Srivastava et al. 2014): in training each element is kept with probability 1 - p and
// scaled by 1 / (1 - p), so evaluation (where the layer is left out) needs no rescaling.
//
// The keep mask of a forward is models::dropout_keep_mask at the position read from the caller's BatchPosition
// when the forward runs: each sample's mask depends only on the seed, the step and the sample's position in the
// global batch (workloads/models/dropout_mask.hpp). It is per stored element of the sample's part of the
// tensor's (possibly blocked) layout, whose batch dimension must be outermost (checked); the padding of a
// blocked layout is zero and stays zero. Backward applies the same mask and scale to dy. Host code; fp32 and
// bf16 tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/cpu/plan.hpp"
#include "workloads/models/dropout_mask.hpp"

namespace dtbench::cpu {

class Dropout {
 public:
  // Construct through Plan::keep (the operations refer to this object). Training plans only.
  Dropout(Plan& plan, std::string name, float p, uint64_t seed, const models::BatchPosition* position,
          const dnnl::memory& x);
  const dnnl::memory& y() const { return y_; }
  dnnl::memory backward(Plan& plan, const dnnl::memory& dy);
  // The keep mask of the last forward (1 kept, 0 dropped), per stored element.
  const std::vector<uint8_t>& mask() const { return mask_; }

 private:
  void forward();
  void apply(const dnnl::memory& in, const dnnl::memory& out) const;
  std::string name_;
  float p_;
  uint64_t seed_;
  const models::BatchPosition* position_;
  size_t samples_ = 0;
  dnnl::memory x_, y_;
  std::vector<uint8_t> mask_;
};

}  // namespace dtbench::cpu
