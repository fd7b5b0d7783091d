// Optimizer step bandwidth against memcpy (Google Benchmark).
//
// For every optimizer the factory knows (default hyperparameters: SGD with momentum 0.9, Adam, ...)
// and three model sizes: 0.27M (ResNet-20), 11.7M (ResNet-18) and 25.6M (ResNet-50) parameters, split
// into ResNet-like tensors (conv weights, each followed by a batch-norm gamma and beta, then an fc
// weight and bias). One benchmark iteration is one Optimizer::step, the call the trainer makes:
// finiteness check, clipping (off by default) and the fused update.
//
// bytes_per_second counts the bytes the update must stream (Optimizer::bytes_per_param: weights read
// and written, gradient read, each state buffer read and written), not the extra reads of the
// finiteness pre-pass or of LARS/LAMB's norm passes, so it shows how close each step comes to moving
// only what it must.
//
// Beside it, in the same process and with the same OpenMP threads: after Google Benchmark's timed loop,
// kRounds interleaved rounds of (one step, one memcpy of the same number of bytes: half read, half
// written) are timed, and the counters report the best round of each:
//   step_GBps  the step's bytes / best step time;   copy_GBps  the same bytes / best copy time;
//   ratio      step_GBps / copy_GBps (the goal: >= 0.7 for SGD with momentum and Adam).
// Interleaving keeps both measurements under the same machine load (the machine is shared).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "core/timer.hpp"
#include "optim/optimizer.hpp"

namespace {

using dtbench::optim::ParamTable;
using dtbench::optim::TensorInfo;
using dtbench::optim::TensorKind;

constexpr int kRounds = 10;

struct ModelSize {
  const char* name;
  size_t params;
  size_t convs;      // conv weight tensors, each with a bn gamma and beta
  size_t channels;   // bn vector length
  size_t classes;    // fc bias length
};

// Parameter counts of torchvision / CIFAR ResNets.
const ModelSize kSizes[] = {
    {"resnet20", 269722, 19, 64, 10},
    {"resnet18", 11689512, 20, 256, 1000},
    {"resnet50", 25557032, 53, 512, 1000},
};

ParamTable resnet_like_table(const ModelSize& m) {
  std::vector<TensorInfo> t;
  size_t offset = 0;
  auto add = [&](const std::string& name, size_t size, TensorKind kind) {
    t.push_back({name, offset, size, kind});
    offset += size;
  };
  const size_t bn_total = 2 * m.convs * m.channels;
  const size_t fc = m.params / 20;  // the fc layer's share, as in ResNet-18/50 (~4-8%)
  const size_t conv_total = m.params - bn_total - fc - m.classes;
  for (size_t i = 0; i < m.convs; ++i) {
    const size_t size = conv_total / m.convs + (i + 1 == m.convs ? conv_total % m.convs : 0);
    add("conv" + std::to_string(i) + ".weight", size, TensorKind::conv_weight);
    add("bn" + std::to_string(i) + ".gamma", m.channels, TensorKind::bn);
    add("bn" + std::to_string(i) + ".beta", m.channels, TensorKind::bn);
  }
  add("fc.weight", fc, TensorKind::fc_weight);
  add("fc.bias", m.classes, TensorKind::bias);
  return ParamTable(std::move(t));
}

// Every thread copies its contiguous share with one memcpy (one thread: a single memcpy).
void parallel_copy(char* dst, const char* src, size_t bytes) {
#pragma omp parallel
  {
    const size_t threads = static_cast<size_t>(omp_get_num_threads());
    const size_t id = static_cast<size_t>(omp_get_thread_num());
    const size_t begin = bytes * id / threads, end = bytes * (id + 1) / threads;
    std::memcpy(dst + begin, src + begin, end - begin);
  }
}

void fill_uniform(std::vector<float>& v, uint64_t seed, float scale) {
  dtbench::Rng rng(seed);
  for (float& x : v) x = scale * static_cast<float>(rng.uniform() - 0.5);
}

void BM_step(benchmark::State& state, std::string optimizer, ModelSize size) {
  const ParamTable table = resnet_like_table(size);
  const dtbench::Json config = {{"name", optimizer}, {"lr", 1e-4}};
  auto opt = dtbench::optim::make_optimizer(config, table, 1);
  std::vector<float> w(table.buffer_size()), g(table.buffer_size());
  fill_uniform(w, 1, 0.2f);
  fill_uniform(g, 2, 0.02f);
  const double lr = 1e-4;
  const size_t bytes = opt->bytes_per_param() * table.num_params();

  for (auto _ : state) {
    opt->step(w, g, lr);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));

  // The same bytes through memcpy, interleaved with steps.
  std::vector<char> src(bytes / 2, 1), dst(bytes / 2, 0);
  double best_step = 1e30, best_copy = 1e30;
  for (int r = 0; r < kRounds; ++r) {
    dtbench::Stopwatch s;
    opt->step(w, g, lr);
    best_step = std::min(best_step, s.seconds());
    dtbench::Stopwatch c;
    parallel_copy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
    best_copy = std::min(best_copy, c.seconds());
  }
  state.counters["bytes_per_param"] = static_cast<double>(opt->bytes_per_param());
  state.counters["step_GBps"] = static_cast<double>(bytes) / best_step * 1e-9;
  state.counters["copy_GBps"] = static_cast<double>(bytes) / best_copy * 1e-9;
  state.counters["ratio"] = best_copy / best_step;
  state.counters["threads"] = omp_get_max_threads();
}

// memcpy alone, for the bytes SGD with momentum (20 B/param) and Adam (28 B/param) move.
void BM_memcpy(benchmark::State& state, size_t bytes) {
  std::vector<char> src(bytes / 2, 1), dst(bytes / 2, 0);
  for (auto _ : state) {
    parallel_copy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(src.size() * 2));
}

const bool registered = [] {
  for (const ModelSize& size : kSizes) {
    for (const std::string& name : dtbench::optim::optimizer_names()) {
      // K-FAC's cost is its factors and inverses, which need a network's layer statistics: bench/kfac.sh.
      if (name == "kfac") continue;
      benchmark::RegisterBenchmark(("step/" + name + "/" + size.name).c_str(), BM_step, name, size)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
    for (size_t bpp : {20, 28}) {
      benchmark::RegisterBenchmark(("memcpy/" + std::to_string(bpp) + "B_per_param/" + size.name).c_str(),
                                   BM_memcpy, bpp * size.params)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("omp_threads", std::to_string(omp_get_max_threads()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
