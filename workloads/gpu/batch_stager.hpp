// Staging of training batches to the device: pinned host buffers and an asynchronous copy stream, so the
// copy of batch k+1 overlaps the computation of batch k.
//
// Two slots, used in turn. For a batch the host (the data loader) writes images and labels into the
// slot's pinned buffers (host_images / host_labels; these block only while the slot's previous copy is
// still reading them), upload() starts the host-to-device copy on the copy stream, and take() hands the
// device copy to the compute stream: the compute stream waits for the copy by an event, the host does
// not wait. After enqueuing the work that reads the batch, the caller calls release(): the next copy into
// that slot's device buffer waits (on the copy stream) until the compute stream has got past that point.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/cuda/device.hpp"
#include "core/cuda/owned.hpp"

namespace dtbench::gpu {

struct DeviceBatch {
  const float* images = nullptr;   // n x image_floats, device
  const int32_t* labels = nullptr;  // n, device
  int n = 0;
};

class BatchStager {
 public:
  // max_images: the largest batch; image_floats: floats per image (C H W); compute: the stream that
  // reads the batches.
  BatchStager(size_t max_images, size_t image_floats, cudaStream_t compute);
  ~BatchStager();
  BatchStager(const BatchStager&) = delete;
  BatchStager& operator=(const BatchStager&) = delete;

  // The pinned buffers of the slot the next upload() uses.
  float* host_images();
  int32_t* host_labels();
  // Copies n images and labels of that slot to the device, asynchronously. BadInput-free: n is checked
  // against max_images (std::invalid_argument, a programming error).
  void upload(int n);
  // The last uploaded batch, ordered before the compute stream's next work. The host may upload the
  // following batch before releasing this one (that is the overlap).
  DeviceBatch take();
  // The compute work that reads the taken batch has been enqueued.
  void release();

  size_t max_images() const { return max_images_; }
  size_t image_floats() const { return image_floats_; }

 private:
  struct Slot {
    PinnedBuffer host_x, host_y;
    DeviceBuffer dev_x, dev_y;
    Event copied;    // on the copy stream, after the slot's last copy
    Event released;  // on the compute stream, after the last reader of the slot
    int n = 0;
  };
  size_t max_images_, image_floats_;
  cudaStream_t compute_;
  Stream copy_;  // declared before the slots: destroyed after the buffers and events its copies use
  std::array<Slot, 2> slots_;
  size_t next_ = 0;      // the slot the next upload fills
  size_t uploaded_ = 1;  // the slot of the last upload()
  size_t taken_ = 1;     // the slot of the last take()
};

}  // namespace dtbench::gpu
