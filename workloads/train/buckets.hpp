// Gradient buckets (as in PyTorch DDP, Li et al. 2020, "PyTorch Distributed: Experiences on
// Accelerating Data Parallel Training"): the flat gradient buffer is cut at tensor boundaries into
// buckets of about bucket_bytes, in reverse layer order (the order backward produces gradients). When
// every tensor of a bucket has been announced ready, its allreduce starts on the reducer's
// communication thread while backward goes on with earlier layers.
//
// Buckets are started strictly in bucket order (a completed bucket waits for its predecessors), so
// every rank queues the same allreduces in the same order whatever order the model announces
// tensors in: the reducer's FIFO then matches message for message across ranks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "reducers/reducer.hpp"

namespace dtbench {

struct TensorRange {
  size_t offset, size;
};

class GradientBuckets {
 public:
  // The local norm of a bucket in device memory, which this class must not read: called with the bucket's index
  // (in launch order) and its flat range just before its allreduce starts (TrainModel::range_norm_sq).
  using DeviceNorm = std::function<void(size_t bucket, size_t offset, size_t size)>;

  // tensors: the ranges of the flat buffer (any order); bucket_bytes > 0. overlap = false starts
  // every bucket only in finish(), after backward. host_norms: sum each bucket's local gradient on the host
  // (local_norm_sq()); false where no noise scale is taken, or where the gradients are device memory, which this
  // class must not read: there `device_norm`, when given, takes each norm.
  GradientBuckets(std::vector<TensorRange> tensors, size_t bucket_bytes, Reducer& reducer, bool overlap,
                  bool host_norms = true, DeviceNorm device_norm = {});

  // Call before backward: grads is the flat gradient buffer this step's allreduces work on.
  void begin(float* grads);
  // Backward's hook: the gradient range [offset, offset + size) is final.
  void ready(size_t offset, size_t size);
  // After backward: starts what is left and waits for every bucket. Returns the seconds spent
  // waiting (the exposed communication).
  double finish();

  // Sum over buckets of the local gradient's squared L2 norm, taken before each allreduce (for the
  // gradient noise scale).
  double local_norm_sq() const { return local_norm_sq_; }
  size_t count() const { return buckets_.size(); }
  size_t bytes_per_step() const { return total_elements_ * sizeof(float); }

 private:
  struct Bucket {
    size_t lo, hi;       // flat range [lo, hi)
    size_t elements;     // sum of the sizes of its tensors (hi - lo unless there are gaps)
    size_t remaining;    // elements not yet announced this step
    bool started;
  };
  void launch_ready_prefix();

  std::vector<Bucket> buckets_;  // in launch order: highest offsets first
  Reducer& reducer_;
  bool overlap_;
  bool host_norms_;
  DeviceNorm device_norm_;
  float* grads_ = nullptr;
  size_t next_ = 0;  // first bucket not yet started
  double local_norm_sq_ = 0;
  size_t total_elements_ = 0;
};

}  // namespace dtbench
