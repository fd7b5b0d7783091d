#include "workloads/train/world.hpp"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/clock_offset.hpp"

namespace dtbench {

OwnedComm::OwnedComm(MPI_Comm parent) { MPI_Comm_dup(parent, &comm_); }

OwnedComm::OwnedComm(MPI_Comm parent, SplitShared) {
  MPI_Comm_split_type(parent, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &comm_);
}

OwnedComm::~OwnedComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

void OwnedComm::sum(double* data, size_t n) const {
  MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm_);
}

World::World() {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

void World::barrier() const { MPI_Barrier(comm_); }

void World::broadcast(std::span<float> data, int from) const {
  if (!data.empty()) MPI_Bcast(data.data(), static_cast<int>(data.size()), MPI_FLOAT, from, comm_);
}

void World::sum(std::span<double> data) const {
  MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_DOUBLE, MPI_SUM, comm_);
}

double World::max(double value) const {
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, comm_);
  return value;
}

void World::max(std::span<int> data) const {
  MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_INT, MPI_MAX, comm_);
}

std::vector<double> World::gather(std::span<const double> mine) const {
  const int n = static_cast<int>(mine.size());
  std::vector<double> all(root() ? mine.size() * static_cast<size_t>(size_) : 0);
  MPI_Gather(mine.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, 0, comm_);
  return all;
}

std::vector<std::string> World::gather_text(const std::string& mine) const {
  // The sizes as 64-bit (one rank's text over 2 GiB wrapped as an int); MPI counts are ints, so the ranks' texts
  // together must stay under 2 GiB: rank 0 sums them and every rank learns the sum, so that all leave together.
  const int64_t n = static_cast<int64_t>(mine.size());
  std::vector<int64_t> sizes64(root() ? static_cast<size_t>(size_) : 0);
  MPI_Gather(&n, 1, MPI_INT64_T, sizes64.data(), 1, MPI_INT64_T, 0, comm_);
  int64_t total = 0;
  for (int64_t s : sizes64) total += s;
  MPI_Bcast(&total, 1, MPI_INT64_T, 0, comm_);
  if (total > INT32_MAX)
    throw SameOnAllRanks(ExitCode::run_failed,
                         "gathering " + std::to_string(total) + " bytes on rank 0: over MPI's 2 GiB");
  std::vector<int> sizes(sizes64.size()), offsets(sizes64.size());
  for (size_t r = 0, at = 0; r < sizes64.size(); at += size_t(sizes64[r]), ++r)
    sizes[r] = static_cast<int>(sizes64[r]), offsets[r] = static_cast<int>(at);
  std::string all(root() ? static_cast<size_t>(total) : 0, '\0');  // only rank 0 receives
  MPI_Gatherv(mine.data(), static_cast<int>(n), MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, 0,
              comm_);
  std::vector<std::string> out;
  for (size_t r = 0; r < sizes.size(); ++r) out.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(sizes[r])));
  return out;
}

std::string World::broadcast_text(const std::string& mine) const {
  int64_t n = root() ? static_cast<int64_t>(mine.size()) : 0;
  MPI_Bcast(&n, 1, MPI_INT64_T, 0, comm_);
  if (n > INT32_MAX) throw RunFailed("broadcasting " + std::to_string(n) + " bytes from rank 0: over MPI's 2 GiB");
  std::string out = root() ? mine : std::string(static_cast<size_t>(n), '\0');
  MPI_Bcast(out.data(), static_cast<int>(n), MPI_CHAR, 0, comm_);
  return out;
}

void World::agree_on_error(const std::optional<Error>& err) const {
  int failed = root() && err ? 1 : 0;
  MPI_Bcast(&failed, 1, MPI_INT, 0, comm_);
  if (failed) throw_error_of(0, err, "");
}

void World::agree_on_any_error(const std::optional<Error>& mine) const {
  // One reduction answers both: the lowest failing rank is size - max(size - rank), and every rank failed when
  // max(-failed) is -1.
  std::array<int, 2> v{mine ? size_ - rank_ : 0, mine ? -1 : 0};
  max(v);
  if (v[0] == 0) return;
  const int first = size_ - v[0];
  std::string prefix;
  if (v[1] != -1 && rank_ == first) {  // some ranks only: which one, and on which node, is what the user needs
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    prefix = "rank " + std::to_string(first) + " of " + std::to_string(size_) + " (" + host + "): ";
  }
  throw_error_of(first, mine, prefix);
}

void World::throw_error_of(int from, const std::optional<Error>& mine, const std::string& prefix) const {
  int code = rank_ == from ? static_cast<int>(mine->code()) : 0;
  MPI_Bcast(&code, 1, MPI_INT, from, comm_);
  std::string msg = rank_ == from ? prefix + mine->what() : "";
  int len = static_cast<int>(msg.size());
  MPI_Bcast(&len, 1, MPI_INT, from, comm_);
  msg.resize(static_cast<size_t>(len));
  MPI_Bcast(msg.data(), len, MPI_CHAR, from, comm_);
  throw SameOnAllRanks(static_cast<ExitCode>(code), msg);
}

void World::checked_on_root(const std::function<void()>& check) const {
  std::optional<Error> err;
  if (root()) {
    try {
      check();
    } catch (const Error& e) {
      err = e;
    }
  }
  agree_on_error(err);
}

World::ClockAlignment World::trace_origin() const {
  using Clock = std::chrono::steady_clock;
  const auto now_ns = [] {
    return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
  };
  int64_t origin = root() ? now_ns() : 0;
  MPI_Bcast(&origin, 1, MPI_INT64_T, 0, comm_);
  int lowest = rank_;  // the lowest world rank on this host: 0 on rank 0's
  MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, OwnedComm::this_host(comm_).get());
  const int elsewhere = lowest != 0;
  std::vector<int> away(static_cast<size_t>(size_));
  MPI_Allgather(&elsewhere, 1, MPI_INT, away.data(), 1, MPI_INT, comm_);
  ClockAlignment out;
  out.same_host_as_root = !elsewhere;
  constexpr int kRounds = 16, kTag = 7301;  // no other point-to-point message is under way on this communicator now
  if (root()) {  // answers each rank elsewhere in turn: its clock's reading when the request arrived
    for (int r = 1; r < size_; ++r)
      for (int i = 0; away[static_cast<size_t>(r)] && i < kRounds; ++i) {
        MPI_Recv(nullptr, 0, MPI_BYTE, r, kTag, comm_, MPI_STATUS_IGNORE);
        const int64_t t = now_ns();
        MPI_Send(&t, 1, MPI_INT64_T, r, kTag, comm_);
      }
  } else if (elsewhere) {
    std::array<ClockRound, kRounds> rounds;
    for (ClockRound& round : rounds) {
      round.sent_ns = now_ns();
      MPI_Send(nullptr, 0, MPI_BYTE, 0, kTag, comm_);
      MPI_Recv(&round.remote_ns, 1, MPI_INT64_T, 0, kTag, comm_, MPI_STATUS_IGNORE);
      round.received_ns = now_ns();
    }
    const ClockOffset est = estimate_clock_offset(rounds);
    origin -= static_cast<int64_t>(std::llround(est.offset_ns));  // rank 0's instant, read on this rank's clock
    out.offset_us = est.offset_ns / 1e3;
    out.uncertainty_us = est.uncertainty_ns / 1e3;
  }
  out.origin = Clock::time_point(std::chrono::nanoseconds(origin));
  return out;
}

int World::default_threads() const {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  const int cpus = ::sched_getaffinity(0, sizeof(mine), &mine) == 0 ? CPU_COUNT(&mine) : omp_get_num_procs();
  const OwnedComm host = OwnedComm::this_host(comm_);
  int local = 0;
  MPI_Comm_size(host.get(), &local);
  std::vector<cpu_set_t> masks(static_cast<size_t>(local));
  MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, masks.data(), sizeof(mine), MPI_BYTE, host.get());
  int sharing = 0;  // the ranks on this host (this one too) that may run on exactly these CPUs
  for (cpu_set_t& m : masks) sharing += CPU_EQUAL(&m, &mine) ? 1 : 0;
  return std::max(1, cpus / std::max(1, sharing));
}

int World::ranks_on_this_host() const {
  int node_size = 0;
  MPI_Comm_size(OwnedComm::this_host(comm_).get(), &node_size);
  return node_size;
}

}  // namespace dtbench
