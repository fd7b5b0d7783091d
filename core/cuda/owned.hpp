// Ownership of one CUDA, cuDNN, cuBLAS or NCCL handle (a stream, an event, a descriptor, a library handle,
// a communicator): destroyed once, when its owner goes, and also when the owner's constructor throws after
// creating it, which a raw member with a destructor does not do (a destructor runs only for a fully built
// object). Movable, not copyable.
//
//   Owned<cudaStream_t, destroy_stream> stream;
//   DTB_CUDA(cudaStreamCreateWithFlags(stream.out(), cudaStreamNonBlocking));
//   kernel<<<g, b, 0, stream.get()>>>(...);
//
// Destroy is a noexcept function of the handle; its status is ignored (there is nothing a destructor can do
// with it, and a failed destroy during unwinding must not hide the error that unwinds).
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

namespace dtbench::gpu {

template <class Handle, void (*Destroy)(Handle) noexcept>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle h) : h_(h) {}
  ~Owned() { reset(); }
  Owned(Owned&& o) noexcept : h_(std::exchange(o.h_, Handle{})) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, Handle{});
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;

  Handle get() const { return h_; }
  explicit operator bool() const { return h_ != Handle{}; }
  // Destroys the handle held (if any) and returns where a create call writes the new one.
  Handle* out() {
    reset();
    return &h_;
  }
  void reset() noexcept {
    if (h_ != Handle{}) Destroy(std::exchange(h_, Handle{}));
  }

 private:
  Handle h_{};
};

inline void destroy_stream(cudaStream_t s) noexcept { cudaStreamDestroy(s); }
inline void destroy_event(cudaEvent_t e) noexcept { cudaEventDestroy(e); }

using Stream = Owned<cudaStream_t, destroy_stream>;
using Event = Owned<cudaEvent_t, destroy_event>;

// A stream's destructor does not wait for its work (cudaStreamDestroy returns at once and the device
// finishes the work later); owners whose buffers the work uses synchronise the stream first.

// Makes `device` current on the calling thread for the guard's lifetime, then restores the previous one:
// for work on a thread that may have another device current (a reducer's communication thread, a
// destructor run from any thread).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) noexcept {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) cudaSetDevice(device);
  }
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace dtbench::gpu
