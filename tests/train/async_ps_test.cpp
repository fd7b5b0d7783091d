// The asynchronous parameter server (workloads/train/async_ps.hpp) on the thread transport: K workers and S shard
// servers as threads, the server threads beside the workers of ranks 0..S-1 as in training. Checked against closed
// forms: every server applies all K x T pushes (SGD with a constant gradient of 1 and learning rate 1/2 moves each
// weight to exactly -n/2 after n updates: halves are exact in float32 up to 2^23), each worker's Comm counts exactly
// T puts and T gets (a 16-byte header and its shard's floats, per server, each way), each server exactly the K x T
// requests and replies, and stale-synchronous parallel keeps every staleness within (K - 1)(2s + 1).
#include <gtest/gtest.h>

#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"
#include "reducers/thread_comm.hpp"
#include "workloads/train/async_ps.hpp"

namespace dtbench {
namespace {

optim::ParamTable small_table() {
  using optim::TensorKind;
  return optim::ParamTable({{"fc1.w", 0, 12, TensorKind::fc_weight, 3},
                            {"fc1.b", 12, 3, TensorKind::bias, 0},
                            {"fc2.w", 15, 9, TensorKind::fc_weight, 3},
                            {"fc2.b", 24, 5, TensorKind::bias, 0}});
}

struct Outcome {
  std::vector<AsyncStats> servers;      // by server rank
  std::vector<CommTraffic> workers;     // by rank
  std::vector<std::vector<float>> last;  // each worker's weights after its last get
  std::vector<int64_t> version;          // server 0's version at each worker's last get
};

// K ranks, S servers, T steps per worker, SSP bound s (< 0: none).
Outcome run_async(int ranks, int servers, int steps, int64_t bound) {
  const optim::ParamTable table = small_table();
  const std::vector<ParamShard> shards = shard_params(table, servers);
  const Json sgd = {{"name", "sgd"}, {"lr", 0.5}, {"momentum", 0.0}, {"weight_decay", 0.0}};
  const auto schedule = optim::make_schedule(sgd, Json(), {{"name", "constant"}}, optim::RunShape{1, 1, steps});
  Outcome out;
  out.servers.resize(static_cast<size_t>(servers));
  out.workers.resize(static_cast<size_t>(ranks));
  out.last.resize(static_cast<size_t>(ranks));
  out.version.resize(static_cast<size_t>(ranks));
  run_ranks(ranks, [&](Comm& comm) {
    const size_t me = static_cast<size_t>(comm.rank());
    std::vector<float> params(table.buffer_size(), 0.0f), grads(table.buffer_size(), 1.0f);
    std::unique_ptr<optim::Optimizer> opt;
    std::unique_ptr<AsyncServer> server;
    std::thread thread;
    std::exception_ptr error;
    if (comm.rank() < servers) {
      const ParamShard& sh = shards[me];
      opt = optim::make_optimizer(sgd, shard_table(table, sh), 0);
      server = std::make_unique<AsyncServer>(comm, std::span<const float>(params).subspan(sh.begin, sh.end - sh.begin),
                                             *opt, *schedule, int64_t{steps} * ranks, bound);
      thread = std::thread([&] {
        try {
          server->run();
        } catch (...) {
          error = std::current_exception();
        }
      });
    }
    AsyncWorker worker(comm, shards);
    try {
      for (int t = 0; t < steps; ++t) EXPECT_EQ(worker.push_pull(grads, params), AsyncReply::go_on);
    } catch (...) {
      // Another rank failed and aborted the world: the server thread wakes with an error too; join it, then report.
      if (thread.joinable()) thread.join();
      throw;
    }
    if (thread.joinable()) thread.join();
    if (error) std::rethrow_exception(error);
    if (server) out.servers[me] = server->stats();
    out.workers[me] = worker.traffic();
    out.last[me] = params;
    out.version[me] = worker.version();
  });
  return out;
}

TEST(AsyncParameterServer, EveryPushIsAppliedAndEveryByteCounted) {
  const int steps = 6;
  for (int ranks : {1, 2, 3, 4}) {
    for (int servers : {1, 2, 4}) {
      if (servers > ranks) continue;
      for (int64_t bound : {int64_t{-1}, int64_t{0}, int64_t{1}}) {
        SCOPED_TRACE("K = " + std::to_string(ranks) + ", S = " + std::to_string(servers) + ", s = " +
                     std::to_string(bound));
        const Outcome o = run_async(ranks, servers, steps, bound);
        const int64_t pushes = int64_t{steps} * ranks;
        const std::vector<ParamShard> shards = shard_params(small_table(), servers);
        uint64_t put = 0;  // a worker's bytes put per step: every server's header and shard
        for (int s = 0; s < servers; ++s) {
          const AsyncStats& a = o.servers[static_cast<size_t>(s)];
          const uint64_t request = 16 + 4 * (shards[size_t(s)].end - shards[size_t(s)].begin);
          put += request;
          EXPECT_EQ(a.updates, pushes);
          EXPECT_EQ(a.traffic.received_bytes, static_cast<uint64_t>(pushes) * request);
          EXPECT_EQ(a.traffic.sent_bytes, static_cast<uint64_t>(pushes) * request);
          EXPECT_EQ(a.traffic.received_messages, 2 * static_cast<uint64_t>(pushes));
          int64_t histogram = 0;
          for (int64_t n : a.staleness_histogram) histogram += n;
          EXPECT_EQ(histogram, pushes);
          if (bound >= 0) {
            EXPECT_LE(a.staleness_max, (ranks - 1) * (2 * bound + 1));
          }
          if (bound == 0) {
            EXPECT_EQ(a.staleness_max, ranks - 1);  // lockstep rounds: the i-th is i stale
          }
        }
        int64_t newest = 0;
        for (int r = 0; r < ranks; ++r) {
          const CommTraffic& w = o.workers[static_cast<size_t>(r)];
          EXPECT_EQ(w.sent_bytes, steps * put) << "rank " << r;
          EXPECT_EQ(w.received_bytes, steps * put) << "rank " << r;
          EXPECT_EQ(w.sent_messages, 2u * servers * steps) << "rank " << r;
          EXPECT_EQ(w.received_messages, 2u * servers * steps) << "rank " << r;
          // Server 0's shard as this worker last got it: -v/2 for the version v it was at.
          const std::vector<float>& p = o.last[static_cast<size_t>(r)];
          for (size_t i = shards[0].begin; i < shards[0].end; ++i)
            ASSERT_EQ(p[i], -0.5f * static_cast<float>(o.version[static_cast<size_t>(r)])) << "rank " << r;
          newest = std::max(newest, o.version[static_cast<size_t>(r)]);
        }
        EXPECT_EQ(newest, pushes);  // the last reply carried every update
        // merged_stats over the ranks' rows: the per-step figure the record takes as bytes_communicated_per_step.
        std::vector<double> rows;
        for (int r = 0; r < ranks; ++r) {
          const std::vector<double> row = async_stats_row(r < servers ? &o.servers[size_t(r)] : nullptr,
                                                          o.workers[size_t(r)], steps);
          rows.insert(rows.end(), row.begin(), row.end());
        }
        const Json m = merged_stats(rows, o.servers[0], servers);
        EXPECT_EQ(m["updates"].get<int64_t>(), pushes);
        EXPECT_DOUBLE_EQ(m["worker_bytes_per_step"].get<double>(), 2.0 * static_cast<double>(put));
        EXPECT_EQ(m["per_server"][0]["bytes_received"].get<int64_t>(),
                  pushes * static_cast<int64_t>(16 + 4 * shards[0].end));
      }
    }
  }
}

}  // namespace
}  // namespace dtbench
