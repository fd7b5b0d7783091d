// Synchronised batch norm (workloads/cpu/sync_batch_norm.hpp).
//
// K replicas run in K threads, each with its own plan and a share of one batch, summing through an in-process
// allreduce. Their outputs, the running statistics, dx, and the replicas' dgamma and dbeta summed (what the
// reducer does) must equal batch norm on the whole batch: the double reference of test_batch_norm.cpp for the
// forward and central finite differences of it for the gradients. K = 1 checks the layer alone.
//
// Tolerances (relative to the largest magnitude of the reference): forward and running statistics 2e-5,
// gradients 1e-5, as in test_batch_norm.cpp and for the same reasons (fp32 outputs of O(1); the backward
// subtracts batch means from dy and cancels). The statistics themselves are summed in double here, so the
// errors are those of the final fp32 arithmetic; observed below 1e-6. A replica normalising with its own
// statistics instead of the global ones is off by 1e-1 or more on these inputs (checked below), so the bounds
// separate right from wrong by four orders of magnitude.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "tests/workloads/harness.hpp"
#include "workloads/cpu/batch_norm.hpp"

namespace dtbench::test {
namespace {

using tag = dnnl::memory::format_tag;

// An allreduce (sum) among `k` threads: each caller blocks until all k have contributed, then gets the sum.
class ThreadSum {
 public:
  explicit ThreadSum(int k) : k_(k) {}
  void operator()(double* data, size_t n) {
    std::unique_lock<std::mutex> lock(m_);
    const uint64_t gen = generation_;
    if (arrived_ == 0) acc_.assign(data, data + n);
    else
      for (size_t i = 0; i < n; ++i) acc_[i] += data[i];
    if (++arrived_ == k_) {
      result_ = acc_;
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != gen; });
    }
    std::copy(result_.begin(), result_.end(), data);
  }

 private:
  int k_, arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<double> acc_, result_;
  std::mutex m_;
  std::condition_variable cv_;
};

struct SyncCase {
  const char* name;
  int replicas, n_per_replica, c, h, w;
  bool relu;
};

class SyncBatchNormTest : public ::testing::TestWithParam<SyncCase> {};

TEST_P(SyncBatchNormTest, ReplicasComputeBatchNormOfTheWholeBatch) {
  const SyncCase& sc = GetParam();
  const int K = sc.replicas;
  const Dims4 whole{K * sc.n_per_replica, sc.c, sc.h, sc.w};
  const size_t C = size_t(sc.c), per = size_t(sc.n_per_replica) * C * size_t(sc.h * sc.w);

  const Vec xv = bn_input(whole, 21, 0.3), dyv = random_vec(whole.size(), 22);
  Vec gamma = random_vec(C, 23, 0.5, 1.5);
  for (size_t i = 0; i < C; i += 2) gamma[i] = -gamma[i];
  const Vec beta = random_vec(C, 24, -0.05, 0.05);
  const Vec run_mean0 = random_vec(C, 25), run_var0 = random_vec(C, 26, 0.5, 2.0);

  ThreadSum sum(K);
  struct Replica {
    std::unique_ptr<Harness> h;
    cpu::BatchNorm* bn = nullptr;
    dnnl::memory x, dy, dx;
  };
  std::vector<Replica> reps(static_cast<size_t>(K));
  for (int r = 0; r < K; ++r) {
    Replica& rep = reps[size_t(r)];
    rep.h = std::make_unique<Harness>(sc.n_per_replica, true, 2 * C, 2 * C);
    rep.h->ctx.cross_replica_sum = [&sum](double* d, size_t n) { sum(d, n); };
    // Blocked input: the layer must reorder to its plain layout and back.
    rep.x = rep.h->tensor({sc.n_per_replica, sc.c, sc.h, sc.w}, tag::nChw16c);
    rep.bn = &rep.h->plan->keep<cpu::BatchNorm>(*rep.h->plan, "bn", cpu::BatchNormShape{sc.c, sc.relu}, 0, C, 0,
                                                rep.x);
    rep.dy = rep.h->plan->alloc(rep.bn->y().get_desc());
    rep.dx = rep.bn->backward(*rep.h->plan, rep.dy);
    copy_into(rep.h->params, 0, gamma);
    copy_into(rep.h->params, C, beta);
    copy_into(rep.h->buffers, 0, run_mean0);
    copy_into(rep.h->buffers, C, run_var0);
    rep.h->set(rep.x, Vec(xv.begin() + long(size_t(r) * per), xv.begin() + long(size_t(r + 1) * per)));
    rep.h->set(rep.dy, Vec(dyv.begin() + long(size_t(r) * per), dyv.begin() + long(size_t(r + 1) * per)));
  }
  std::vector<std::thread> threads;
  for (auto& rep : reps)
    threads.emplace_back([&rep] {
      rep.h->plan->run_forward();
      rep.h->plan->run_backward({});
    });
  for (auto& t : threads) t.join();

  // Forward: the replicas' outputs, concatenated, are batch norm of the whole batch.
  const double eps = 1e-5;
  Vec mean, var;
  const Vec y_ref = batch_norm_train(xv, whole, gamma, beta, eps, sc.relu, &mean, &var);
  Vec y, dx;
  for (auto& rep : reps) {
    Vec yr = rep.h->get(rep.bn->y()), dxr = rep.h->get(rep.dx);
    y.insert(y.end(), yr.begin(), yr.end());
    dx.insert(dx.end(), dxr.begin(), dxr.end());
  }
  EXPECT_LE(rel_max_err(y, y_ref), 2e-5);

  // Running statistics: the global mean and unbiased variance, the same on every replica.
  const double m = double(whole.n) * whole.h * whole.w;
  Vec run_mean(C), run_var(C);
  for (size_t c = 0; c < C; ++c) {
    run_mean[c] = 0.9 * run_mean0[c] + 0.1 * mean[c];
    run_var[c] = 0.9 * run_var0[c] + 0.1 * var[c] * m / (m - 1.0);
  }
  for (auto& rep : reps) {
    EXPECT_LE(rel_max_err(slice(rep.h->buffers, 0, C), run_mean), 2e-5);
    EXPECT_LE(rel_max_err(slice(rep.h->buffers, C, C), run_var), 2e-5);
  }

  // Backward: dx of the whole batch's loss sum(dy y); dgamma and dbeta summed over replicas.
  auto loss = [&](const Vec& xx, const Vec& g, const Vec& b) {
    return dot(dyv, batch_norm_train(xx, whole, g, b, eps, sc.relu));
  };
  const double step = 1e-5;
  const Vec dx_fd = fd_gradient([&](const Vec& v) { return loss(v, gamma, beta); }, xv, step);
  const Vec dg_fd = fd_gradient([&](const Vec& v) { return loss(xv, v, beta); }, gamma, step);
  const Vec db_fd = fd_gradient([&](const Vec& v) { return loss(xv, gamma, v); }, beta, step);
  Vec dg(C, 0.0), db(C, 0.0);
  for (auto& rep : reps)
    for (size_t c = 0; c < C; ++c) dg[c] += rep.h->grads[c], db[c] += rep.h->grads[C + c];
  const double dx_err = rel_max_err(dx, dx_fd), dg_err = rel_max_err(dg, dg_fd), db_err = rel_max_err(db, db_fd);
  EXPECT_LE(dx_err, 1e-5);
  EXPECT_LE(dg_err, 1e-5);
  EXPECT_LE(db_err, 1e-5);
  std::printf("[%s] y %.2e dx %.2e dgamma %.2e dbeta %.2e\n", sc.name, rel_max_err(y, y_ref), dx_err, dg_err,
              db_err);

  // The check can fail: replica 0's own batch statistics give a visibly different output when K > 1.
  if (K > 1) {
    const Dims4 own{sc.n_per_replica, sc.c, sc.h, sc.w};
    const Vec y_own = batch_norm_train(Vec(xv.begin(), xv.begin() + long(per)), own, gamma, beta, eps, sc.relu);
    EXPECT_GT(rel_max_err(Vec(y.begin(), y.begin() + long(per)), y_own), 1e-2);
  }
}

INSTANTIATE_TEST_SUITE_P(Replicas, SyncBatchNormTest,
                         ::testing::Values(SyncCase{"k1_c16", 1, 4, 16, 3, 3, false},
                                           SyncCase{"k2_c16_relu", 2, 3, 16, 4, 4, true},
                                           SyncCase{"k3_c5", 3, 2, 5, 3, 3, false},
                                           SyncCase{"k4_c16_relu", 4, 1, 16, 1, 2, true},
                                           // One value per channel on each replica: fine when synchronised.
                                           SyncCase{"k4_c16_1x1", 4, 1, 16, 1, 1, false}),
                         [](const ::testing::TestParamInfo<SyncCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace dtbench::test
