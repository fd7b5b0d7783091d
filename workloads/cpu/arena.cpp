#include "workloads/cpu/arena.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <new>
#include <string>

#include "core/error.hpp"

namespace dtbench::cpu {

namespace {

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

Arena::~Arena() {
  if (base_ != nullptr) munmap(base_, reserved_);
}

void* Arena::take(size_t bytes) {
  if (base_ == nullptr) {
    // A group can never usefully exceed the machine's memory, so that bounds the reservation. Reserved
    // address space counts against a limit on it (ulimit -v, as some clusters set): take at most an eighth of
    // such a limit, since a plan has three arenas and a model several plans.
    size_t bound = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * page_size();
    rlimit limit{};
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
      bound = std::min(bound, static_cast<size_t>(limit.rlim_cur) / 8);
    reserved_ = round_up(bound, page_size());
    void* p = mmap(nullptr, reserved_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    base_ = static_cast<char*>(p);
  }
  const size_t begin = round_up(used_, 64);
  const size_t end = begin + std::max<size_t>(bytes, 1);
  if (end > reserved_)
    throw RunFailed("gradient checkpointing: a segment needs more than the " + std::to_string(reserved_ >> 20) +
                    " MiB of address space its arena reserves (the machine's memory, or an eighth of the address-space "
                    "limit, ulimit -v); raise the limit or use more segments");
  if (end > committed_) {
    const size_t want = round_up(end, page_size());
    if (mprotect(base_ + committed_, want - committed_, PROT_READ | PROT_WRITE) != 0)
      throw RunFailed("gradient checkpointing: cannot commit " + std::to_string((want - committed_) >> 20) +
                      " MiB more for a segment's arena (out of memory or over the commit limit)");
    committed_ = want;
  }
  used_ = end;
  high_water_ = std::max(high_water_, used_);
  return base_ + begin;
}

}  // namespace dtbench::cpu
