#include "workloads/cpu/dropout.hpp"

#include <cstring>

#include <stdexcept>

namespace dtbench::cpu {

using dnnl::memory;
using dt = dnnl::memory::data_type;

namespace {

float bf16_to_f32(uint16_t v) {
  uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Round to nearest even, as oneDNN's conversions do.
uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40u);  // NaN stays NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

size_t stored_elements(const memory::desc& md) {
  return md.get_size() / (md.data_type() == dt::bf16 ? 2 : 4);
}

// Whether each sample's elements are one contiguous run of the stored tensor: the batch dimension has the
// largest stride and is not blocked.
bool batch_outermost(const memory::desc& md) {
  const auto& d = md.data;
  if (d.format_kind != dnnl_blocked || d.ndims < 1) return false;
  const auto& b = d.format_desc.blocking;
  for (int i = 0; i < b.inner_nblks; ++i)
    if (b.inner_idxs[i] == 0) return false;
  for (int i = 1; i < d.ndims; ++i)
    if (b.strides[i] > b.strides[0]) return false;
  return true;
}

}  // namespace

Dropout::Dropout(Plan& plan, std::string name, float p, uint64_t seed, const models::BatchPosition* position,
                 const memory& x)
    : name_(name), p_(p), seed_(seed), position_(position), x_(x) {
  const memory::desc md = x.get_desc();
  if (md.data_type() != dt::f32 && md.data_type() != dt::bf16) {
    throw std::logic_error("dropout: fp32 or bf16 tensors only");
  }
  samples_ = static_cast<size_t>(md.dims()[0]);
  const size_t stored = stored_elements(md);
  if (!batch_outermost(md) || samples_ == 0 || stored % samples_ != 0)
    throw std::logic_error("dropout: the batch must be the outermost dimension of " + name + "'s layout");
  y_ = plan.alloc(md);
  mask_.assign(stored, 1);
  plan.forward_host(name, [this]() { forward(); });
}

void Dropout::forward() {
  models::dropout_keep_mask(seed_, *position_, p_, samples_, mask_.size() / samples_, mask_.data());
  apply(x_, y_);
}

void Dropout::apply(const memory& in, const memory& out) const {
  const float scale = 1.0f / (1.0f - p_);
  const size_t n = mask_.size();
  const uint8_t* m = mask_.data();
  if (in.get_desc().data_type() == dt::f32) {
    const float* a = static_cast<const float*>(in.get_data_handle());
    float* b = static_cast<float*>(out.get_data_handle());
    for (size_t i = 0; i < n; ++i) b[i] = m[i] ? a[i] * scale : 0.0f;
  } else {
    const uint16_t* a = static_cast<const uint16_t*>(in.get_data_handle());
    uint16_t* b = static_cast<uint16_t*>(out.get_data_handle());
    for (size_t i = 0; i < n; ++i) b[i] = m[i] ? f32_to_bf16(bf16_to_f32(a[i]) * scale) : uint16_t(0);
  }
}

memory Dropout::backward(Plan& plan, const memory& dy) {
  memory dy2 = plan.backward_as(dy, x_.get_desc(), name_ + ".diff_dst");
  memory dx = plan.alloc(x_.get_desc());
  plan.backward_host(name_ + ".bwd", [this, dy2, dx]() { apply(dy2, dx); });
  return dx;
}

}  // namespace dtbench::cpu
