// The trainer's view of its MPI job: rank and size, and the few collectives the run itself needs (the
// initial broadcast, the per-step agreement, gathers for the record, barriers). Gradient traffic does not
// go through here: it goes through the configured Reducer on its own communicator. All of the trainer's
// direct MPI calls are in world.cpp.
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.hpp"

namespace dtbench {

// A communicator this object owns (a duplicate of another, or its shared-memory split), freed unless MPI is
// already finalised.
class OwnedComm {
 public:
  explicit OwnedComm(MPI_Comm parent);
  // The ranks of `parent` that share this rank's host and its memory (an MPI shared-memory split).
  static OwnedComm this_host(MPI_Comm parent) { return OwnedComm(parent, kSharedMemorySplit); }
  ~OwnedComm();
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;
  MPI_Comm get() const { return comm_; }
  void sum(double* data, size_t n) const;  // in place, across its ranks

 private:
  enum SplitShared { kSharedMemorySplit };
  OwnedComm(MPI_Comm parent, SplitShared);
  MPI_Comm comm_ = MPI_COMM_NULL;
};

class World {
 public:
  World();  // MPI_COMM_WORLD; MPI must be initialised
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }
  MPI_Comm comm() const { return comm_; }

  void barrier() const;
  void broadcast(std::span<float> data, int from = 0) const;  // rank `from`'s values to every rank
  void sum(std::span<double> data) const;       // in place, across ranks
  double max(double value) const;
  void max(std::span<int> data) const;  // in place, across ranks
  // Rank 0 receives every rank's `mine` (rank after rank); other ranks receive nothing.
  std::vector<double> gather(std::span<const double> mine) const;
  // Every rank's text, in rank order, on rank 0 (empty elsewhere).
  std::vector<std::string> gather_text(const std::string& mine) const;
  // Rank 0's text on every rank (under 2 GiB).
  std::string broadcast_text(const std::string& mine) const;
  // Rank 0 decided (err holds its error, if any); every rank learns the outcome, and all throw the same
  // SameOnAllRanks, so the job ends with one message and one exit code.
  void agree_on_error(const std::optional<Error>& err) const;
  // Any rank may have failed (`mine` holds this rank's error, if any), and every rank learns it: when every rank
  // failed (the same config or file everywhere), rank 0's error as it is; when only some did (a file missing on one
  // node, a node without a GPU), the lowest failing rank's, prefixed "rank R of K (host): ". All throw it as the same
  // SameOnAllRanks, so the job ends with one message and one exit code.
  void agree_on_any_error(const std::optional<Error>& mine) const;
  // Runs f on every rank and agrees on its errors (agree_on_any_error), so that a rank that failed alone does not
  // leave the others waiting in their next collective. f must make no collective call that could be left waiting
  // by a rank that failed before it.
  template <class F>
  auto on_every_rank(F&& f) const {
    if constexpr (std::is_void_v<decltype(f())>) {
      on_every_rank([&] { return f(), true; });
    } else {
      std::optional<decltype(f())> out;
      std::optional<Error> err;
      try {
        out.emplace(f());
      } catch (const Error& e) {
        err = e;
      }
      agree_on_any_error(err);
      return std::move(*out);
    }
  }
  // Runs `check` on rank 0 only; an Error it throws is thrown on every rank (agree_on_error).
  void checked_on_root(const std::function<void()>& check) const;
  // The ranks that share this rank's host and its memory (an MPI shared-memory split; collective).
  int ranks_on_this_host() const;
  // Whether every rank runs on this rank's host.
  bool on_one_host() const { return ranks_on_this_host() == size_; }
  // The compute threads this rank should run when the config leaves it to dtbench: the CPUs this process may run
  // on (its affinity mask), divided among the ranks on this host whose mask is the same, at least 1. OpenMP's own
  // default is the whole mask, so K unbound ranks on one host (mpirun --bind-to none, srun --cpu-bind=none) ran K
  // times as many threads as CPUs: 2.36 times the time of a 48-step ResNet-8 run on 2 ranks of 2 cores
  // (bench/threads_default.sh, BENCHMARKS.md). Ranks
  // bound to CPUs of their own keep them all; ranks whose masks overlap without being the same count as alone
  // (they may still oversubscribe the CPUs they share). Collective.
  int default_threads() const;

  // The trace's time 0 (trace::start): rank 0's steady clock at this call, as a point on this rank's steady
  // clock, so that one instant has one time on every rank's timeline. A rank sharing rank 0's memory shares its
  // clock (Linux's CLOCK_MONOTONIC is one per kernel, unless a time namespace shifts it: not handled): exact. A
  // rank on another host estimates its clock's offset from rank 0's by Cristian's algorithm (core/clock_offset.hpp,
  // 16 round trips with rank 0, one rank after another: about 16 * N round trips at start-up, e.g. 0.4 s for 500
  // ranks elsewhere over TCP, and only with --trace). Collective.
  struct ClockAlignment {
    std::chrono::steady_clock::time_point origin;
    bool same_host_as_root = true;
    double offset_us = 0;       // rank 0's clock - this rank's (0 on rank 0's host)
    double uncertainty_us = 0;  // the offset's error bound (0 on rank 0's host)
  };
  ClockAlignment trace_origin() const;

 private:
  // Rank `from` holds the error (`mine` there); every rank receives its code and message and throws them.
  [[noreturn]] void throw_error_of(int from, const std::optional<Error>& mine, const std::string& prefix) const;

  MPI_Comm comm_ = MPI_COMM_WORLD;
  int rank_ = 0, size_ = 1;
};

}  // namespace dtbench
