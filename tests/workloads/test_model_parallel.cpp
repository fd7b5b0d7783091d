// Tensor model parallelism on the oneDNN backend (workloads/cpu/split_layer.hpp, models::shard_rows).
//
// The shards' tables tile the whole model's rows and their initial weights are the whole model's rows bit for bit
// (the same random streams). M shards running in M threads, joined by an in-process allgather, see one batch:
// their logits and loss must be the whole model's, each shard's gradient the whole model's gradient at its rows,
// and the tensors a shard holds whole (ResNet-8's batch norms) the whole model's gradient, equal bit for bit on
// every shard (they sum the same gathered partial input gradients in the same order). Every conv and fc layer is
// split: the MLP, the Simple CNN and ResNet-8 (with uneven shards: 5 classes, 16 to 64 channels over 3 or 5).
//
// Tolerance: 1e-5 of the largest magnitude. The shards compute the same dot products as the whole layer; the
// input gradient of a split layer is summed over shards instead of inside one GEMM, an fp32 rounding difference
// (~1e-7 relative) that the next layers carry. Observed: below 1e-6. A wrong row offset or a missing shard's
// partial sum is off by 1e-2 or more.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/workloads/needs_bf16.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "workloads/cpu/model.hpp"
#include "workloads/models/model_description.hpp"

namespace dtbench::test {
namespace {

// Allgather among `k` threads: every caller deposits its block and, once all k have, copies all of them in member
// order.
class ThreadAllgather {
 public:
  explicit ThreadAllgather(int k) : k_(k), blocks_(static_cast<size_t>(k)) {}
  void operator()(int rank, const float* mine, float* all, const std::vector<size_t>& counts) {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return leaving_ == 0; });  // the previous round's callers have copied it
    blocks_[static_cast<size_t>(rank)].assign(mine, mine + counts[static_cast<size_t>(rank)]);
    if (++arrived_ == k_) {
      leaving_ = k_, arrived_ = 0;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return leaving_ > 0 && arrived_ == 0; });
    }
    for (int j = 0; j < k_; ++j) {
      std::vector<float>& b = blocks_[static_cast<size_t>(j)];
      EXPECT_EQ(b.size(), counts[static_cast<size_t>(j)]) << "member " << j << " gave another count";
      b.resize(counts[static_cast<size_t>(j)]);
      all = std::copy(b.begin(), b.end(), all);
    }
    if (--leaving_ == 0) cv_.notify_all();
  }

 private:
  int k_, arrived_ = 0, leaving_ = 0;
  std::vector<std::vector<float>> blocks_;
  std::mutex m_;
  std::condition_variable cv_;
};

models::ModelSpec small_spec(const std::string& arch) {
  models::ModelSpec s;
  s.arch = arch;
  s.in_c = 2, s.in_h = 8, s.in_w = 8;
  s.classes = 5;
  const bool resnet = arch.rfind("resnet8", 0) == 0;
  s.hidden = resnet ? 0 : 7;
  if (arch == "simple_cnn") s.conv_filters = {5, 6};
  if (arch == "resnet8+checkpointing") s.arch = "resnet8", s.checkpoint_segments = 2;  // segments rerun the gathers
  return s;
}

const models::ParamInfo& find(const std::vector<models::ParamInfo>& table, const std::string& name) {
  for (const auto& p : table)
    if (p.name == name) return p;
  throw std::logic_error("no tensor " + name);
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(double(x)));
  return m;
}

TEST(ShardRows, TileTheRowsInOrderAndBalanced) {
  for (int64_t rows : {1, 5, 7, 64, 100})
    for (int m = 1; m <= std::min<int64_t>(rows, 6); ++m) {
      int64_t next = 0;
      for (int j = 0; j < m; ++j) {
        const models::RowRange r = models::shard_rows(rows, m, j);
        EXPECT_EQ(r.begin, next);
        EXPECT_GE(r.size(), rows / m);
        EXPECT_LE(r.size(), rows / m + 1);
        next = r.end;
      }
      EXPECT_EQ(next, rows);
    }
}

TEST(ModelParallelDescription, ShardsHoldTheWholeModelsRowsAndInitialWeights) {
  for (const char* arch : {"mlp", "simple_cnn", "resnet8"}) {
    const models::ModelSpec whole_spec = small_spec(arch);
    const models::ModelDescription whole = models::describe(whole_spec);
    std::vector<float> wp(whole.param_count()), wb(whole.buffer_count());
    models::initialise(whole_spec, whole, 77, wp, wb);
    for (int m = 1; m <= 5; ++m) {
      std::vector<int64_t> covered(whole.params.size(), 0);
      for (int j = 0; j < m; ++j) {
        models::ModelSpec s = whole_spec;
        s.shards = m, s.shard = j;
        const models::ModelDescription part = models::describe(s);
        ASSERT_EQ(part.params.size(), whole.params.size());
        EXPECT_EQ(part.macs_per_sample, whole.macs_per_sample);  // the whole model's, per image
        if (m == 1) {
          EXPECT_EQ(part.rank_macs_per_sample, whole.macs_per_sample);
        } else {
          EXPECT_LT(part.rank_macs_per_sample, whole.macs_per_sample);
        }
        std::vector<float> pp(part.param_count()), pb(part.buffer_count());
        models::initialise(s, part, 77, pp, pb);
        for (size_t i = 0; i < part.params.size(); ++i) {
          const models::ParamInfo& p = part.params[i];
          const models::ParamInfo& w = whole.params[i];
          const size_t row = w.size / size_t(w.shape[0]);
          const bool split = w.kind != models::ParamInfo::bn && m > 1;  // every conv and fc, not batch norm
          EXPECT_EQ(p.full_rows, split ? w.shape[0] : 0) << arch << " " << p.name;
          const models::RowRange r = split ? models::shard_rows(w.shape[0], m, j) : models::RowRange{0, w.shape[0]};
          EXPECT_EQ(p.row_begin, r.begin);
          ASSERT_EQ(p.size, size_t(r.size()) * row) << p.name;
          EXPECT_TRUE(std::equal(pp.begin() + long(p.offset), pp.begin() + long(p.offset + p.size),
                                 wp.begin() + long(w.offset + size_t(r.begin) * row)))
              << arch << " M=" << m << " shard " << j << " " << p.name;
          covered[i] += r.size();
        }
      }
      for (size_t i = 0; i < whole.params.size(); ++i) {
        const bool split = whole.params[i].kind != models::ParamInfo::bn && m > 1;
        EXPECT_EQ(covered[i], split ? whole.params[i].shape[0] : m * whole.params[i].shape[0]) << whole.params[i].name;
      }
    }
  }
}

TEST(ModelParallelDescription, GroupsLargerThanALayerAreRefused) {
  models::ModelSpec s = small_spec("mlp");
  s.shards = 6, s.shard = 0;  // 5 classes
  EXPECT_THROW(models::describe(s), BadInput);
  s = small_spec("resnet8");
  s.classes = 20, s.shards = 17;  // the stem's 16 channels
  try {
    models::describe(s);
    ADD_FAILURE() << "no error";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("/parallel/model_parallel: a group of 17 ranks is more than conv1.weight's 16"),
              std::string::npos)
        << e.what();
  }
}

struct Result {
  double loss = 0;
  std::vector<float> logits, eval_logits, grads;
  std::vector<models::ParamInfo> table;
};

// alltoall among the same threads, from the allgather: every member gathers every member's whole buffer and keeps
// its own block of each.
void thread_alltoall(ThreadAllgather& gather, int rank, int m, const float* mine, float* from_all,
                     const std::vector<size_t>& counts) {
  size_t total = 0, offset = 0;
  for (int j = 0; j < m; ++j) {
    if (j < rank) offset += counts[size_t(j)];
    total += counts[size_t(j)];
  }
  std::vector<float> all(total * size_t(m));
  gather(rank, mine, all.data(), std::vector<size_t>(size_t(m), total));
  const size_t own = counts[size_t(rank)];
  for (int j = 0; j < m; ++j) std::copy_n(all.data() + size_t(j) * total + offset, own, from_all + size_t(j) * own);
}

// alltoall: give the group the alltoall too, so that groups of more than 2 reduce-scatter the input gradients
// (counted in `alltoalls`).
std::atomic<int> alltoalls{0};
Result run_model(const models::ModelSpec& spec, const std::vector<float>& x, const std::vector<int32_t>& labels, int n,
                 ThreadAllgather* gather, bool alltoall = false) {
  cpu::Model model(spec, 77);
  if (gather != nullptr) {
    models::ModelParallelGroup g;
    g.size = spec.shards, g.rank = spec.shard;
    g.allgather = [gather, rank = spec.shard](const float* mine, float* all, const std::vector<size_t>& counts) {
      (*gather)(rank, mine, all, counts);
    };
    if (alltoall)
      g.alltoall = [gather, rank = spec.shard, m = spec.shards](const float* mine, float* from_all,
                                                               const std::vector<size_t>& counts) {
        ++alltoalls;
        thread_alltoall(*gather, rank, m, mine, from_all, counts);
      };
    model.set_model_parallel_group(g);
  }
  Result r;
  r.loss = model.forward(x.data(), labels.data(), n, true);
  r.logits.assign(model.logits(), model.logits() + size_t(n) * size_t(spec.classes));
  model.backward();
  r.grads.assign(model.grads().begin(), model.grads().end());
  r.table = model.param_table();
  model.forward(x.data(), labels.data(), n, false);
  r.eval_logits.assign(model.logits(), model.logits() + size_t(n) * size_t(spec.classes));
  return r;
}

TEST(ModelParallelModel, ShardsComputeTheWholeModel) {
  const int n = 6;
  // bf16: a split fully connected layer's outputs stay fp32 where the whole model rounds them to bf16 (8 bits of
  // mantissa, 2^-8 = 3.9e-3 relative), and each shard's partial input gradient is rounded before the sum: a few bf16
  // roundings: observed between 3e-3 and 1e-2 of the largest magnitude, bounded at 3e-2; a wrong offset or a missing
  // partial sum is off by more.
  for (const auto& [arch, precision, tol] : {std::tuple<const char*, const char*, double>{"mlp", "fp32", 1e-5},
                                             {"simple_cnn", "fp32", 1e-5},
                                             {"resnet8", "fp32", 1e-5},
                                             {"resnet8+checkpointing", "fp32", 1e-5},
                                             {"mlp", "bf16", 3e-2},
                                             {"simple_cnn", "bf16", 3e-2},
                                             {"resnet8", "bf16", 3e-2}}) {
    if (std::string(precision) == "bf16") DTBENCH_SKIP_WITHOUT_BF16();  // the last cases: fp32's ran
    models::ModelSpec whole_spec = small_spec(arch);
    whole_spec.precision = precision;
    std::vector<float> x(size_t(n) * 2 * 8 * 8);
    std::vector<int32_t> labels(n);
    Rng rng(3, {1});
    for (float& v : x) v = float(rng.normal());
    for (int i = 0; i < n; ++i) labels[size_t(i)] = i % whole_spec.classes;
    const Result whole = run_model(whole_spec, x, labels, n, nullptr);
    const double g_scale = max_abs(whole.grads), l_scale = max_abs(whole.logits);
    for (int m : {2, 3, 5}) {
      ThreadAllgather gather(m);
      std::vector<Result> shards(static_cast<size_t>(m));
      std::vector<std::thread> threads;
      for (int j = 0; j < m; ++j)
        threads.emplace_back([&, j] {
          models::ModelSpec s = whole_spec;
          s.shards = m, s.shard = j;
          shards[size_t(j)] = run_model(s, x, labels, n, &gather);
        });
      for (auto& t : threads) t.join();
      // The reduce-scatter path (groups of more than 2 with an alltoall) sums every element of the input gradients
      // in the same member order as the allgather path: the same bits, gradients and all.
      std::vector<Result> scattered(static_cast<size_t>(m));
      alltoalls = 0;
      threads.clear();
      for (int j = 0; j < m; ++j)
        threads.emplace_back([&, j] {
          models::ModelSpec s = whole_spec;
          s.shards = m, s.shard = j;
          scattered[size_t(j)] = run_model(s, x, labels, n, &gather, true);
        });
      for (auto& t : threads) t.join();
      // Every split layer but the first sums input gradients: with m > 2 each shard reduce-scattered at least once.
      if (m > 2) {
        EXPECT_GE(alltoalls.load(), m) << arch << " " << precision << " M=" << m;
      }
      for (int j = 0; j < m; ++j) {
        const Result& r = shards[size_t(j)];
        ASSERT_EQ(r.grads.size(), scattered[size_t(j)].grads.size());
        EXPECT_EQ(0, std::memcmp(r.grads.data(), scattered[size_t(j)].grads.data(), r.grads.size() * 4))
            << arch << " " << precision << " M=" << m << " shard " << j << ": the reduce-scatter changed the bits";
        SCOPED_TRACE(std::string(arch) + " " + precision + " M=" + std::to_string(m) + " shard " + std::to_string(j));
        EXPECT_NEAR(r.loss, whole.loss, tol * std::fabs(whole.loss));
        for (size_t k = 0; k < whole.logits.size(); ++k) {
          ASSERT_NEAR(r.logits[k], whole.logits[k], tol * l_scale) << k;
          ASSERT_NEAR(r.eval_logits[k], whole.eval_logits[k], tol * l_scale) << k;
        }
        for (const models::ParamInfo& p : r.table) {
          const models::ParamInfo& w = find(whole.table, p.name);
          const size_t row = w.size / size_t(w.shape[0]);
          for (size_t k = 0; k < p.size; ++k)
            ASSERT_NEAR(r.grads[p.offset + k], whole.grads[w.offset + size_t(p.row_begin) * row + k], tol * g_scale)
                << p.name << " " << k;
          if (p.full_rows == 0) {  // held whole: every shard's copy gets the same bits
            const size_t at0 = find(shards[0].table, p.name).offset;  // uneven shards place it elsewhere
            EXPECT_EQ(0, std::memcmp(r.grads.data() + p.offset, shards[0].grads.data() + at0, p.size * 4)) << p.name;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace dtbench::test
