#include "reducers/shared_memory.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <new>
#include <string>

#include "core/error.hpp"
#include "reducers/exchange.hpp"

namespace dtbench {
namespace {

// The setup's one message kind, a fixed size so every receive matches its send: ok, or why not; the
// sender's chunk and small-chunk rule (every rank must take the same path in every round); the CPUs the
// sender may run on (their union over the ranks decides whether waits may spin).
struct SetupMessage {
  uint8_t ok = 0;
  std::array<char, 247> text{};  // the segment's name, or the error
  uint64_t chunk = 0, small_bytes = 0;
  cpu_set_t cpus{};
  void set(bool good, const std::string& s) {
    ok = good ? 1 : 0;
    text.fill('\0');
    std::memcpy(text.data(), s.data(), std::min(s.size(), text.size() - 1));
  }
  std::string str() const { return std::string(text.data(), strnlen(text.data(), text.size())); }
};

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// Maps `bytes` of the shared-memory object `name`, creating and reserving it when `create`. Returns the
// mapping, or nullptr with *error set.
void* map_segment(const std::string& name, size_t bytes, bool create, std::string* error) {
  const int fd = create ? shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600) : shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    *error = errno_text("shm_open " + name);
    return nullptr;
  }
  auto fail = [&](const std::string& why) -> void* {
    *error = why;
    close(fd);
    if (create) shm_unlink(name.c_str());  // made here: leave nothing in /dev/shm
    return nullptr;
  };
  if (create) {
    // posix_fallocate returns the error instead of setting errno.
    if (const int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rc != 0) {
      errno = rc;
      return fail(errno_text("reserving " + std::to_string(bytes) + " bytes of shared memory (" + name + ")"));
    }
  } else {
    struct stat st{};
    if (fstat(fd, &st) != 0) return fail(errno_text("fstat of " + name));
    if (static_cast<size_t>(st.st_size) != bytes)
      return fail("shared-memory object " + name + " has " + std::to_string(st.st_size) + " bytes, expected " +
                  std::to_string(bytes));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return fail(errno_text("mmap of " + std::to_string(bytes) + " bytes of " + name));
  close(fd);  // the mapping keeps the object
  return p;
}

// dst[i] = a[i] + b[i]: the first two ranks' contributions (later ones are added with sum_into).
void sum_two(float* __restrict dst, const float* __restrict a, const float* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
}

// dst = source(0) + source(1) + ... + source(p-1), n floats, added in rank order (p >= 2): the one summation
// order of both paths, so every rank gets the same bits.
template <class Source>
void sum_in_rank_order(float* dst, int p, size_t n, Source source) {
  sum_two(dst, source(0), source(1), n);
  for (int q = 2; q < p; ++q) sum_into(dst, source(q), n);
}

}  // namespace

size_t SharedMemory::chunk_elems(int ranks, const ReducerOptions& o) {
  const size_t areas = 2 * (static_cast<size_t>(ranks) + 1);
  const size_t cap = kMaxSegmentBytes / areas / sizeof(float);
  // Whole cache lines per area, so two areas never share one.
  const size_t want = std::max<size_t>(16, std::min(o.segment_bytes / sizeof(float), cap));
  return want / 16 * 16;
}

std::string SharedMemory::layout_problem(const std::vector<int>& nodes) {
  for (size_t r = 1; r < nodes.size(); ++r)
    if (nodes[r] != nodes[0])
      return "reducer 'shared_memory' needs every rank on one node; rank 0 is on node " + std::to_string(nodes[0]) +
             " and rank " + std::to_string(r) + " on node " + std::to_string(nodes[r]) +
             " (use 'hierarchical' across nodes)";
  return "";
}

SharedMemory::SharedMemory(Comm& comm, const ReducerOptions& options) : Allreduce(comm) {
  const int p = comm.size(), me = comm.rank();
  if (const std::string e = layout_problem(comm.nodes()); !e.empty()) throw BadInput(e);
  if (p == 1) return;
  chunk_ = chunk_elems(p, options);
  small_bytes_ = options.small_transfer_bytes;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  map_bytes_ = static_cast<size_t>(p) * sizeof(Counters) + 2 * (static_cast<size_t>(p) + 1) * chunk_ * sizeof(float);
  map_bytes_ = (map_bytes_ + page - 1) / page * page;

  // Rank 0 makes the segment (its counters constructed, at round 0) and names it to the others; each
  // answers whether it mapped it and with the same options; rank 0 unlinks it (mapped or not, nothing stays
  // in /dev/shm) and sends the verdict, so every rank either succeeds or throws the same error. A transfer
  // that throws (the run was aborted) unmaps and unlinks on its way out too.
  const int tag = kTagSharedMemory;
  SetupMessage msg, mine;
  mine.chunk = chunk_;
  mine.small_bytes = small_bytes_;
  if (sched_getaffinity(0, sizeof mine.cpus, &mine.cpus) != 0) CPU_SET(0, &mine.cpus);
  std::string error, name;
  try {
    if (me == 0) {
      static std::atomic<unsigned> serial{0};
      const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
      name = "/dtbench-" + std::to_string(getpid()) + "-" + std::to_string(serial++) + "-" +
             std::to_string(static_cast<unsigned long long>(now));
      map_ = map_segment(name, map_bytes_, true, &error);
      if (map_ == nullptr) name.clear();  // map_segment unlinked it
      for (int r = 0; map_ != nullptr && r < p; ++r) new (static_cast<Counters*>(map_) + r) Counters{};
      msg = mine;
      msg.set(map_ != nullptr, map_ != nullptr ? name : error);
      for (int r = 1; r < p; ++r) comm.send(r, &msg, sizeof msg, tag);
      bool all_ok = map_ != nullptr;
      cpu_set_t cpus = mine.cpus;
      for (int r = 1; r < p; ++r) {
        SetupMessage reply;
        comm.recv(r, &reply, sizeof reply, tag);
        if (!reply.ok && all_ok) error = "rank " + std::to_string(r) + ": " + reply.str();
        all_ok = all_ok && reply.ok;
        CPU_OR(&cpus, &cpus, &reply.cpus);
      }
      if (!name.empty()) shm_unlink(name.c_str());
      name.clear();
      msg.set(all_ok, error);
      msg.cpus = cpus;
      for (int r = 1; r < p; ++r) comm.send(r, &msg, sizeof msg, tag);
    } else {
      comm.recv(0, &msg, sizeof msg, tag);
      if (msg.ok && (msg.chunk != mine.chunk || msg.small_bytes != mine.small_bytes))
        error = "options differ from rank 0's: chunk " + std::to_string(mine.chunk) + " against " +
                std::to_string(msg.chunk) + " floats, small-chunk rule " + std::to_string(mine.small_bytes) +
                " against " + std::to_string(msg.small_bytes) + " bytes";
      else if (msg.ok)
        map_ = map_segment(msg.str(), map_bytes_, false, &error);
      SetupMessage reply = mine;
      reply.set(!msg.ok || error.empty(), error);
      comm.send(0, &reply, sizeof reply, tag);
      comm.recv(0, &msg, sizeof msg, tag);
      if (!msg.ok && error.empty()) error = msg.str();
    }
  } catch (...) {
    if (!name.empty()) shm_unlink(name.c_str());
    if (map_ != nullptr) munmap(map_, map_bytes_);
    map_ = nullptr;
    throw;
  }
  if (!msg.ok) {
    if (map_ != nullptr) munmap(map_, map_bytes_);
    map_ = nullptr;
    throw RunFailed("reducer 'shared_memory': cannot set up the shared segment: " + error);
  }
  // Spin only when the node's ranks have a core each: the CPUs any of them may run on, against the ranks.
  spin_ = CPU_COUNT(&msg.cpus) >= p;
  counters_ = static_cast<Counters*>(map_);
  areas_ = reinterpret_cast<float*>(static_cast<char*>(map_) + static_cast<size_t>(p) * sizeof(Counters));
}

SharedMemory::~SharedMemory() {
  if (map_ != nullptr) munmap(map_, map_bytes_);
}

float* SharedMemory::input(int slot, int rank) const {
  const size_t areas = static_cast<size_t>(comm().size()) + 1;
  return areas_ + (static_cast<size_t>(slot) * areas + static_cast<size_t>(rank)) * chunk_;
}

float* SharedMemory::output(int slot) const { return input(slot, comm().size()); }

void SharedMemory::wait_all(std::atomic<uint64_t> Counters::*which, uint64_t round) const {
  using Clock = std::chrono::steady_clock;
  const int p = comm().size();
  for (int r = 0; r < p; ++r) {
    const std::atomic<uint64_t>& c = counters_[r].*which;
    if (c.load(std::memory_order_acquire) >= round) continue;
    // Up to kSpin of spinning covers a peer that is running; after it, yield on every poll so a peer
    // waiting for this core gets it; and now and then ask whether the run was aborted.
    const Clock::time_point spin_until = Clock::now() + (spin_ ? kSpin : Clock::duration::zero());
    bool spinning = spin_;
    for (unsigned polls = 1; c.load(std::memory_order_acquire) < round; ++polls) {
      if (spinning) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (polls % 64 == 0) spinning = Clock::now() < spin_until;
      } else {
        sched_yield();
        if (polls % 1024 == 0) comm().check_alive();
      }
    }
  }
}

void SharedMemory::run(float* data, size_t count) {
  Comm& c = comm();
  const int p = c.size(), me = c.rank();
  if (p == 1 || count == 0) return;
  const size_t np = static_cast<size_t>(p), mine = static_cast<size_t>(me);
  for (size_t begin = 0; begin < count; begin += chunk_) {
    const size_t n = std::min(chunk_, count - begin);
    const uint64_t k = ++round_;
    const int slot = static_cast<int>(k % 2);
    float* chunk = data + begin;
    const size_t b0 = block_begin(n, np, mine), b1 = block_begin(n, np, mine + 1);

    if (k > 2) wait_all(&Counters::released, k - 2);  // every rank has left round k-2: the slot is free
    float* in = input(slot, me);
    if (n * np * sizeof(float) <= small_bytes_) {
      // A small chunk: every rank publishes all of it and sums all of it, in rank order (the same bits
      // everywhere), so the round waits once instead of three times.
      std::memcpy(in, chunk, n * sizeof(float));
      counters_[me].arrived.store(k, std::memory_order_release);
      wait_all(&Counters::arrived, k);
      sum_in_rank_order(chunk, p, n, [&](int q) { return input(slot, q); });
      counters_[me].released.store(k, std::memory_order_release);
      continue;
    }

    // 1. Publish this rank's chunk, all but its own block.
    std::memcpy(in, chunk, b0 * sizeof(float));
    std::memcpy(in + b1, chunk + b1, (n - b1) * sizeof(float));
    counters_[me].arrived.store(k, std::memory_order_release);

    // 2. Reduce block me over the ranks, in rank order, into the output, then into the buffer.
    wait_all(&Counters::arrived, k);
    float* out = output(slot) + b0;
    const size_t len = b1 - b0;
    sum_in_rank_order(out, p, len, [&](int q) -> const float* { return (q == me ? chunk : input(slot, q)) + b0; });
    std::memcpy(chunk + b0, out, len * sizeof(float));
    counters_[me].reduced.store(k, std::memory_order_release);

    // 3. Gather the other ranks' reduced blocks.
    wait_all(&Counters::reduced, k);
    const float* all = output(slot);
    std::memcpy(chunk, all, b0 * sizeof(float));
    std::memcpy(chunk + b1, all + b1, (n - b1) * sizeof(float));
    counters_[me].released.store(k, std::memory_order_release);
  }
}

CostTerms SharedMemory::cost(int p, double n, const ReducerOptions& o, double eager) {
  // Per chunk of b bytes: 2 waits for all ranks on the critical path, each a latency with no bytes
  // (charged as eager messages): arrived and reduced; the third, for round k-2's release, is long
  // satisfied when chunks follow each other. Each rank copies (p-1)/p b in and (p-1)/p b out and reduces
  // (p-1)/p b (its block from p-1 others), all ranks at once. A small chunk (b p <= small_transfer_bytes):
  // one wait, b copied in and (p-1) b reduced by every rank.
  CostTerms t;
  const double P = p, chunk = static_cast<double>(chunk_elems(p, o) * sizeof(float));
  const double full = std::floor(n / chunk), last = n - full * chunk;
  auto add = [&](double count, double b) {
    if (count <= 0 || b <= 0) return;
    const bool small = b * P <= static_cast<double>(o.small_transfer_bytes);
    t.messages(count * (small ? 1 : 2), 0, eager);
    t.beta += count * (small ? b : 2 * (P - 1) / P * b);
    t.gamma += count * (small ? (P - 1) * b : (P - 1) / P * b);
  };
  add(full, chunk);
  add(1, last);
  t.concurrency = P;
  return t;
}

}  // namespace dtbench
