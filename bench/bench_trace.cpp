// What one `--trace` hook costs (Google Benchmark), the per-span side of bench/trace_overhead.sh: that script
// compares whole runs with and without --trace, whose round-to-round noise on a shared machine (several percent)
// hides an effect this small; this one times the hooks themselves. A traced ResNet-8 step on 2 ranks records
// about 30 spans (6004 in 200 steps), so 30 x the "on" time per step, against a step of about 30 ms, is the
// trace's share of the step.
//   BM_SpanOff       a trace::Span with tracing off: one relaxed atomic load and a branch at each end
//   BM_SpanOn        the same with tracing on: two clock reads, a string, a lock and an append
//   BM_SequenceOn    one trace::Sequence::end with tracing on (the step's consecutive phases)
// The recorded spans are dropped every 2^16 iterations (outside the timing), as a run's 6000 never grow large.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "core/trace.hpp"

namespace {

using dtbench::trace::Sequence;
using dtbench::trace::Span;

void BM_SpanOff(benchmark::State& state) {
  for (auto _ : state) {
    Span s("forward", "forward");
    benchmark::ClobberMemory();
  }
}

// Restarts the recording (which clears it) every 2^16 iterations, with the timer paused.
void restart_every(benchmark::State& state, int64_t& n) {
  if ((++n & 0xffff) == 0) {
    state.PauseTiming();
    dtbench::trace::start();
    state.ResumeTiming();
  }
}

void BM_SpanOn(benchmark::State& state) {
  dtbench::trace::start();
  int64_t n = 0;
  for (auto _ : state) {
    { Span s("backward: layer group 3", "backward"); }
    restart_every(state, n);
  }
}

void BM_SequenceOn(benchmark::State& state) {
  dtbench::trace::start();
  Sequence seq;
  int64_t n = 0;
  for (auto _ : state) {
    seq.end("optimizer", "step");
    restart_every(state, n);
  }
}

}  // namespace

// Off first: the recording is off until the first trace::start().
BENCHMARK(BM_SpanOff);
BENCHMARK(BM_SpanOn);
BENCHMARK(BM_SequenceOn);
BENCHMARK_MAIN();
