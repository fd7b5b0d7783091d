// Inverted dropout (Srivastava et al. 2014): in training each element is kept with probability 1 - p and
// scaled by 1 / (1 - p), so evaluation (where the layer is left out) needs no rescaling.
//
// The keep mask of a step comes from dtbench::Rng(seed, {stream, step}) with `step` read from the caller's
// counter when the forward runs, so a run's masks are a function of its seed. The mask is per stored element
// of the tensor's (possibly blocked) layout; the padding of a blocked layout is zero and stays zero. Backward
// applies the same mask and scale to dy. Host code; fp32 and bf16 tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/cpu/plan.hpp"

namespace dtbench::cpu {

class Dropout {
 public:
  // Construct through Plan::keep (the operations refer to this object). Training plans only.
  Dropout(Plan& plan, std::string name, float p, uint64_t seed, uint64_t stream, const uint64_t* step,
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
  uint64_t seed_, stream_;
  const uint64_t* step_;
  dnnl::memory x_, y_;
  std::vector<uint8_t> mask_;
};

}  // namespace dtbench::cpu
