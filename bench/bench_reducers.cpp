// Google Benchmark cases for every reducer on the thread transport (ranks are threads of this process):
// arguments are the rank count and the buffer size in bytes; bytes_per_second is the algorithm
// bandwidth (algbw) and busbw the bus bandwidth of nccl-tests (algbw x 2(n-1)/n). The MPI comparison,
// MPI_Allreduce included, is bench/reducer_sweep.sh (`dtbench allreduce` under mpirun).
//
// Rank 0 runs on the benchmark's thread and drives the timed loop; the other ranks run the same number
// of iterations (state.max_iterations) on their own threads, so every iteration is one complete
// allreduce on all ranks. Reducers and buffers are built before the loop.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "reducers/exchange.hpp"
#include "reducers/pattern.hpp"
#include "reducers/reducer.hpp"
#include "reducers/thread_comm.hpp"

namespace dtbench {
namespace {

void BM_Allreduce(benchmark::State& state, const std::string& name) {
  const int ranks = static_cast<int>(state.range(0));
  const size_t bytes = static_cast<size_t>(state.range(1));
  const size_t count = bytes / sizeof(float);
  CheckPattern pattern(ranks);
  run_ranks(ranks, [&](Comm& comm) {
    auto reducer = make_reducer(name, comm);
    std::vector<float> buf(count);
    pattern.fill(comm.rank(), buf.data(), count);
    reducer->allreduce(buf.data(), count);  // first use for this size: scratch allocation
    if (comm.rank() == 0) {
      for (auto _ : state) {
        reducer->allreduce(buf.data(), count);
        benchmark::DoNotOptimize(buf.data());
      }
    } else {
      for (benchmark::IterationCount i = 0; i < state.max_iterations; ++i) reducer->allreduce(buf.data(), count);
    }
  });
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.counters["busbw"] = benchmark::Counter(static_cast<double>(bytes) * allreduce_bus_factor(ranks),
                                               benchmark::Counter::kIsIterationInvariantRate,
                                               benchmark::Counter::kIs1000);
  state.counters["ranks"] = ranks;
}

void reducer_args(benchmark::internal::Benchmark* b) {
  for (int ranks : {2, 4, 8})
    for (int64_t bytes : {int64_t{4} << 10, int64_t{64} << 10, int64_t{1} << 20, int64_t{16} << 20})
      b->Args({ranks, bytes});
  b->ArgNames({"ranks", "bytes"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

// The local reduction (dst += src): the gamma of the cost model, one thread.
void BM_SumInto(benchmark::State& state) {
  const size_t count = static_cast<size_t>(state.range(0)) / sizeof(float);
  std::vector<float> a(count, 1.0f), b(count, 2.0f);
  for (auto _ : state) {
    sum_into(a.data(), b.data(), count);
    benchmark::DoNotOptimize(a.data());
  }
  // Bytes of the reduced vector per iteration (the unit of gamma); memory traffic is three times that.
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

BENCHMARK_CAPTURE(BM_Allreduce, parameter_server, std::string("parameter_server"))->Apply(reducer_args);
BENCHMARK_CAPTURE(BM_Allreduce, tree, std::string("tree"))->Apply(reducer_args);
BENCHMARK_CAPTURE(BM_Allreduce, butterfly, std::string("butterfly"))->Apply(reducer_args);
BENCHMARK_CAPTURE(BM_Allreduce, ring, std::string("ring"))->Apply(reducer_args);
BENCHMARK_CAPTURE(BM_Allreduce, halving_doubling, std::string("halving_doubling"))->Apply(reducer_args);
BENCHMARK(BM_SumInto)->RangeMultiplier(8)->Range(4 << 10, 64 << 20)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace dtbench

BENCHMARK_MAIN();
