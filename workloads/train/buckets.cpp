#include "workloads/train/buckets.hpp"

#include <algorithm>
#include <utility>

#include "core/timer.hpp"

namespace dtbench {

GradientBuckets::GradientBuckets(std::vector<TensorRange> tensors, size_t bucket_bytes, Reducer& reducer,
                                 bool overlap, bool host_norms, DeviceNorm device_norm)
    : reducer_(reducer), overlap_(overlap), host_norms_(host_norms), device_norm_(std::move(device_norm)) {
  std::sort(tensors.begin(), tensors.end(), [](auto& a, auto& b) { return a.offset > b.offset; });
  const size_t cap = std::max<size_t>(bucket_bytes / sizeof(float), 1);
  for (const auto& t : tensors) {
    if (t.size == 0) continue;
    total_elements_ += t.size;
    if (buckets_.empty() || buckets_.back().elements >= cap) {
      buckets_.push_back({t.offset, t.offset + t.size, 0, 0, false});
    }
    Bucket& b = buckets_.back();
    b.lo = std::min(b.lo, t.offset);
    b.hi = std::max(b.hi, t.offset + t.size);
    b.elements += t.size;
  }
}

void GradientBuckets::begin(float* grads) {
  grads_ = grads;
  next_ = 0;
  local_norm_sq_ = 0;
  for (auto& b : buckets_) {
    b.remaining = b.elements;
    b.started = false;
  }
}

void GradientBuckets::ready(size_t offset, size_t size) {
  size_t end = offset + size;
  for (auto& b : buckets_) {
    size_t lo = std::max(b.lo, offset), hi = std::min(b.hi, end);
    if (lo < hi) b.remaining -= std::min(b.remaining, hi - lo);
  }
  if (overlap_) launch_ready_prefix();
}

void GradientBuckets::launch_ready_prefix() {
  while (next_ < buckets_.size() && buckets_[next_].remaining == 0) {
    const size_t index = next_;
    Bucket& b = buckets_[next_++];
    if (device_norm_) device_norm_(index, b.lo, b.hi - b.lo);
    if (host_norms_) {
      const float* g = grads_ + b.lo;
      double s = 0;
      for (size_t i = 0, n = b.hi - b.lo; i < n; ++i) s += static_cast<double>(g[i]) * g[i];
      local_norm_sq_ += s;
    }
    b.started = true;
    reducer_.start(grads_ + b.lo, b.hi - b.lo);
  }
}

double GradientBuckets::finish() {
  for (auto& b : buckets_) b.remaining = 0;  // backward is over: everything is final
  Stopwatch wait;
  launch_ready_prefix();
  reducer_.wait();
  return wait.seconds();
}

}  // namespace dtbench
