// A per-step timeline in Chrome's trace event format (JSON; Perfetto and chrome://tracing open it), as
// Horovod's timeline gives for its runs: `dtbench train --trace FILE`.
//
// Each span is a complete ("X") event: name, category, start `ts` and duration `dur` in microseconds,
// pid = the rank, tid = the track. Track 0, "training", is the rank's main thread: data, forward,
// backward (and within it one span per layer group, ending where that group's gradients became final),
// the wait for the allreduces, the optimizer, evaluation and checkpoints. Track 1, "communication", is
// the reducer's thread (one span per bucket's allreduce) or, in asynchronous SGD, rank 0's parameter-server
// thread (one span per update). Spans of one track nest and never overlap.
//
// Off unless start() was called: then every hook costs one relaxed atomic load and a branch, and builds
// no string (Span takes a const char* name; dynamic names are made only when on).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>

#include "core/json.hpp"

namespace dtbench::trace {

inline constexpr int kTrainingTrack = 0;
inline constexpr int kCommunicationTrack = 1;

namespace detail {
extern std::atomic<bool> recording;
}

inline bool on() { return detail::recording.load(std::memory_order_relaxed); }

// Starts recording in this process; time 0 is `origin` on this process's steady clock: the caller gives one
// instant on every rank (the trainer: rank 0's, aligned by clock_offset.hpp on other hosts), so that the ranks'
// spans line up on one timeline. `clock` (how the
// origin was found) goes into the rank's process_name metadata, for a reader to judge the alignment.
void start(std::chrono::steady_clock::time_point origin, Json clock = nullptr);
// Time 0 is now, for one process alone (the benchmarks).
inline void start() { start(std::chrono::steady_clock::now()); }
// Microseconds since start().
double now_us();
// Records one span; thread-safe. `args` is shown by the viewers when the span is selected.
void span(std::string name, const char* category, int track, double start_us, double end_us, Json args = nullptr);
// This process's spans as Chrome trace events with pid `rank` (a JSON array), plus the track names.
Json events(int rank);

// Records [construction, destruction) on `track` when tracing is on.
class Span {
 public:
  Span(const char* name, const char* category, int track = kTrainingTrack)
      : name_(name), category_(category), track_(track), start_(on() ? now_us() : -1.0) {}
  ~Span() {
    if (start_ >= 0) span(name_, category_, track_, start_, now_us());
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  const char* name_;
  const char* category_;
  int track_;
  double start_;
};

// Consecutive spans on the training track: each end(name) records the time since the previous end (or
// since construction); enclose(name) records one span around all of them (a step). No-op when tracing is off.
// A sequence for step N left by an exception (the step that diverged) before enclose() is enclosed by its
// destructor as "step N (ended by an error)", so that its phases still sit inside a step on the timeline.
class Sequence {
 public:
  explicit Sequence(int64_t step = -1)
      : first_(on() ? now_us() : -1.0), last_(first_), step_(step), exceptions_(std::uncaught_exceptions()) {}
  ~Sequence() {
    if (first_ < 0 || enclosed_ || step_ < 0 || std::uncaught_exceptions() <= exceptions_) return;
    try {
      span("step " + std::to_string(step_) + " (ended by an error)", "step", kTrainingTrack, first_, last_);
    } catch (...) {  // unwinding already: a span lost is better than a terminate
    }
  }
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;
  void end(const char* name, const char* category) {
    if (last_ < 0) return;
    const double t = now_us();
    span(name, category, kTrainingTrack, last_, t);
    last_ = t;
  }
  void enclose(std::string name, const char* category) {
    enclosed_ = true;
    if (first_ >= 0) span(std::move(name), category, kTrainingTrack, first_, last_);
  }
  bool active() const { return last_ >= 0; }
  double last() const { return last_; }  // < 0 when off

 private:
  double first_, last_;
  int64_t step_;
  int exceptions_;
  bool enclosed_ = false;
};

}  // namespace dtbench::trace
