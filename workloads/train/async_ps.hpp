// Asynchronous SGD through a parameter server (Dean et al. 2012, "Large Scale Distributed Deep
// Networks", Downpour SGD; the seeds' asynchronous SGD).
//
// Rank 0 runs a server thread that owns the master weights and the optimizer. Every rank, rank 0
// included, is a worker: it computes a gradient on its own shard at its current copy of the weights,
// pushes it to the server, and pulls the weights the server holds after applying it. There is no
// barrier: the server applies gradients in arrival order, so a gradient may have been computed at
// weights several updates old. That delay, the staleness, is measured per update (server version at
// apply time minus the version the worker computed at) and recorded.
//
// Delay-compensated optimizers (DCASGD, Zheng et al. 2017) receive the weights the gradient was
// computed at (the server keeps the copy it last sent each worker) and correct for the staleness.
//
// Terms: an update applies one worker's gradient (per-rank batch b); K updates process one global
// batch, so epochs are counted as updates x b / N and the LR schedule's step is updates / K.
//
// Stale-synchronous parallel (SSP; Ho et al. 2013, "More Effective Distributed ML via a Stale Synchronous
// Parallel Parameter Server"): a worker's clock counts its pushes; with a staleness bound s >= 0 a worker at
// clock c may compute its next gradient only once the slowest worker still running is at clock c - s or
// later. The server enforces it by holding back the reply (the fresh weights) to a worker that is too far
// ahead until the slowest catches up. s = 0 makes the workers advance in lockstep, one push each per round;
// no bound (s < 0 here, the default) is plain asynchronous SGD. A gradient's staleness (updates applied
// between its worker's pull and its push) is then at most (K - 1)(2s + 1): each other worker pushes at most
// 2s + 1 times in between (from s clocks behind to s + 1 ahead).
//
// Sharded servers (the seeds' hierarchical parameter server; Li et al. 2014, "Scaling Distributed Machine
// Learning with the Parameter Server", OSDI: the keys are split into ranges over the server nodes, workers
// push (put) gradients and pull (get) weights by range, and every server keeps a clock per worker): with
// /reducer/servers S > 1, ranks 0..S-1 each run a server that owns one shard, a contiguous range of whole
// tensors balanced by size (shard_params), with an optimizer of its own over that range. A worker's step
// puts each shard's gradient to its server, then gets each shard's weights back. Versions, clocks, SSP's
// holds and staleness are per server; every worker pushes to every server once a step, so the clocks of
// one worker agree across servers and the bound holds for the whole model.
//
// Transport: every message goes through a Comm (reducers/comm.hpp), so the bytes the servers and workers move
// are counted there like a reducer's. Each server and each worker talks through a view of its own over all the
// ranks (a SubComm), so its counters hold its own traffic: on a rank that runs both, the two are apart. A server
// takes the next request with recv_any (whichever worker comes first); a worker posts its gets (the replies) and
// its puts to every server at once and waits for them once (Comm::exchange).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "core/json.hpp"
#include "optim/optimizer.hpp"
#include "optim/param_table.hpp"
#include "optim/schedule.hpp"
#include "reducers/comm.hpp"
#include "reducers/sub_comm.hpp"

namespace dtbench {

struct AsyncStats {
  int64_t updates = 0;
  double staleness_mean = 0;
  int64_t staleness_max = 0;
  std::vector<int64_t> staleness_histogram;  // [0, 1, ..., 15, >= 16]
  int64_t staleness_bound = -1;              // SSP's s; < 0: none
  int64_t held_replies = 0;                  // replies SSP held back until the slowest worker caught up
  CommTraffic traffic;                       // the server's own transfers, as its Comm counted them
  bool diverged = false;
  std::string diverged_detail;
  Json to_json() const;
};

// One rank's figures, for merged_stats: its server's statistics (`server` is nullptr on a rank without one) and its
// worker's traffic over the steps it ran.
std::vector<double> async_stats_row(const AsyncStats* server, const CommTraffic& worker, int64_t worker_steps);
// The servers' statistics merged on rank 0 from every rank's row (rank after rank, as World::gather gives them;
// `root` is rank 0's server's, which rank 0 always runs): `updates` the pushes every shard applied (the least of
// the servers' counts), the staleness over every shard's updates (histograms summed, so S per push; mean weighted
// by updates; max), holds summed, `servers` and each one's figures in `per_server` (its bytes received and sent
// among them), `worker_bytes_per_step` (a worker's bytes sent and received per step, the mean over the workers'
// steps), and `diverged` with its detail.
Json merged_stats(std::span<const double> rows, const AsyncStats& root, int servers);

// One server's range of the flat parameter buffer: [begin, end), whole tensors.
struct ParamShard {
  size_t begin = 0, end = 0;
};
// S contiguous shards of whole tensors, cut where the running element count first reaches s/S of the total.
// BadInput when S exceeds the tensors; RunFailed when the table's tensors do not tile its buffer in order.
std::vector<ParamShard> shard_params(const optim::ParamTable& table, int servers);
// The table of the tensors in `shard`, offsets taken from shard.begin: a shard server's optimizer's.
optim::ParamTable shard_table(const optim::ParamTable& table, const ParamShard& shard);

// The server half: runs on its own thread on its rank until `total_updates` gradients were applied to its
// shard (or a non-finite gradient ended the run), answering every worker request with its current weights.
class AsyncServer {
 public:
  // comm: every rank, workers and servers (its waiting policy is the servers' and workers': MpiComm's
  // set_poll_sleep_us, reducer.poll_us); initial: the shard's weights; staleness_bound: SSP's s (>= 0), or < 0
  // for no bound.
  AsyncServer(Comm& comm, std::span<const float> initial, optim::Optimizer& opt, const optim::Schedule& sched,
              int64_t total_updates, int64_t staleness_bound = -1);
  void run();  // the server thread's body
  const AsyncStats& stats() const { return stats_; }  // complete once run() has returned
  std::span<const float> weights() const { return w_; }  // the shard's master weights: final once run() returned
  // Any thread (rank 0's evaluation, on reaching the target): apply no more updates and answer every
  // further request with AsyncReply::finished.
  void request_finish() { finish_.store(true); }

 private:
  SubComm comm_;  // this server's view: its own counters
  std::vector<float> w_, grad_;
  // Replies in flight (run()) and their headers, which outlive them: declared first, destroyed last.
  std::deque<std::array<int64_t, 2>> reply_headers_;
  std::vector<SendRequest> in_flight_;
  std::vector<std::vector<float>> sent_;  // weights last sent to each worker (DCASGD's w_bak)
  optim::Optimizer& opt_;
  const optim::Schedule& sched_;
  int64_t total_updates_;
  int64_t staleness_bound_;
  AsyncStats stats_;
  std::atomic<bool> finish_{false};
};

// The server's answer to a push: go on, stop because the run diverged, or stop because the run is over
// (its target was reached).
enum class AsyncReply { go_on = 0, diverged = 1, finished = 2 };

// The worker half: put each shard's gradient to its server (server s is rank s), then get each shard's
// weights back. Returns the most severe answer (diverged, then finished, then go_on; anything but go_on:
// stop, then leave() if this worker had requests left).
class AsyncWorker {
 public:
  AsyncWorker(Comm& comm, std::vector<ParamShard> shards)
      : comm_(comm), shards_(std::move(shards)), versions_(shards_.size(), 0) {}
  AsyncReply push_pull(std::span<const float> grads, std::span<float> params);
  // The update count of server 0's shard when this worker last pulled (its evaluations count by it).
  int64_t version() const { return versions_[0]; }
  // Tells every server this worker sends no more requests (after a stop, before its share is done); stop_all (a stop
  // signal): the servers then answer every other worker's next push with AsyncReply::finished, so all stop.
  void leave(bool stop_all = false);
  // What this worker moved: its puts, gets and leave messages.
  CommTraffic traffic() const { return comm_.traffic(); }

 private:
  SubComm comm_;  // this worker's view: its own counters
  std::vector<ParamShard> shards_;
  std::vector<int64_t> versions_;  // each server's version at this worker's last pull
};

}  // namespace dtbench
