// A region of memory that several groups of allocations share in turn: the activations of gradient
// checkpointing's segments (plan.hpp), of which only one exists at a time.
//
// Each group starts again at the region's base (reset()), so the region holds the largest group, not their
// sum. Addresses must be known when a layer is built (layers keep pointers into their memories) while the
// largest group is known only once the whole plan is built; so the region reserves address space up front
// (no memory: PROT_NONE, not counted as committed) and commits pages as the high-water mark grows. A page is
// resident once written, so the resident size is the high-water mark.
#pragma once

#include <cstddef>

namespace dtbench::cpu {

class Arena {
 public:
  Arena() = default;
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // `bytes` bytes at the next 64-byte boundary of the current group, zero-filled where never used before.
  // Throws RunFailed when the reservation (the machine's physical memory, or an eighth of a limit on the
  // address space) is exhausted or the pages cannot be committed; std::bad_alloc when nothing can be reserved.
  void* take(size_t bytes);
  // The next take() starts a new group at the base.
  void reset() { used_ = 0; }
  // The largest group so far, in bytes: the memory the arena holds.
  size_t high_water() const { return high_water_; }

 private:
  char* base_ = nullptr;
  size_t reserved_ = 0;
  size_t committed_ = 0;  // bytes readable and writable from base_, a multiple of the page size
  size_t used_ = 0;
  size_t high_water_ = 0;
};

}  // namespace dtbench::cpu
