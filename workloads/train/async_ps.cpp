#include "workloads/train/async_ps.hpp"

#include <algorithm>
#include <cstdint>

#include "core/error.hpp"
#include "core/trace.hpp"

namespace dtbench {
namespace {

// Message layout: a header of 2 int64 (worker: the version its gradient was computed at; server: the
// new version and a stop flag) followed by the float payload, on separate tags. Non-overtaking keeps header and
// payload from one sender in order.
constexpr int kTagHeader = 101;
constexpr int kTagGrad = 102;
constexpr int kTagReplyHeader = 103;
constexpr int kTagWeights = 104;
constexpr size_t kHeaderBytes = 2 * sizeof(int64_t);

}  // namespace

Json AsyncStats::to_json() const {
  return {{"updates", updates},
          {"staleness_mean", staleness_mean},
          {"staleness_max", staleness_max},
          {"staleness_histogram", staleness_histogram},
          {"staleness_bound", staleness_bound >= 0 ? Json(staleness_bound) : Json()},
          {"held_replies", held_replies},
          {"histogram_bins", "staleness 0..15, then >= 16"}};
}

AsyncServer::AsyncServer(Comm& comm, std::span<const float> initial, optim::Optimizer& opt,
                         const optim::Schedule& sched, int64_t total_updates, int64_t staleness_bound)
    : comm_(comm), w_(initial.begin(), initial.end()), grad_(initial.size()), opt_(opt),
      sched_(sched), total_updates_(total_updates), staleness_bound_(staleness_bound) {
  stats_.staleness_bound = staleness_bound;
  sent_.assign(static_cast<size_t>(comm_.size()), w_);  // every worker starts from the initial weights
  stats_.staleness_histogram.assign(17, 0);
}

void AsyncServer::run() {
  const int size = comm_.size();
  const size_t bytes = w_.size() * sizeof(float);
  // Each worker sends total_updates / K requests (its share of the steps) unless it leaves early (a
  // divergence or a stop signal); the server answers every request, so no worker is left waiting.
  std::vector<int64_t> left(static_cast<size_t>(size), total_updates_ / size);
  int64_t requests_left = total_updates_ / size * size;
  int64_t version = 0;
  double staleness_sum = 0;
  bool stop = false;
  std::vector<int64_t> clock(static_cast<size_t>(size), 0);  // pushes received from each worker
  std::vector<int> held;                                    // workers whose reply SSP holds back
  // Replies go out as non-blocking sends and are completed only before the next update changes w_ (or at the
  // end): the server takes the next request meanwhile instead of waiting for a worker to read the weights. Their
  // headers are members, so that on an error (MPI lets an abandoned send finish on its own) they outlive the sends.
  auto settle = [&] {
    for (SendRequest& r : in_flight_) comm_.wait(r);
    in_flight_.clear();
    reply_headers_.clear();
  };
  auto reply = [&](int dst, AsyncReply answer) {
    const auto& header = reply_headers_.emplace_back(std::array<int64_t, 2>{version, static_cast<int64_t>(answer)});
    in_flight_.push_back(comm_.isend(dst, header.data(), kHeaderBytes, kTagReplyHeader));
    in_flight_.push_back(comm_.isend(dst, w_.data(), bytes, kTagWeights));
    if (opt_.uses_weight_backup()) std::copy(w_.begin(), w_.end(), sent_[static_cast<size_t>(dst)].begin());
  };
  // SSP: worker w may go on once every worker that still has pushes to make is at clock[w] - s or later
  // (a worker with none left holds nobody back).
  auto may_go = [&](int w) {
    if (staleness_bound_ < 0) return true;
    int64_t slowest = INT64_MAX;
    for (size_t v = 0; v < clock.size(); ++v)
      if (left[v] > 0) slowest = std::min(slowest, clock[v]);
    return slowest >= clock[static_cast<size_t>(w)] - staleness_bound_;
  };
  auto release_held = [&](AsyncReply answer) {
    std::vector<int> still;
    for (int w : held) {
      if (answer != AsyncReply::go_on || may_go(w)) reply(w, answer);
      else still.push_back(w);
    }
    held.swap(still);
  };
  while (requests_left > 0) {
    int64_t header[2];
    const int src = comm_.recv_any(header, kHeaderBytes, kTagHeader);
    if (header[1] == 1 || header[1] == 2) {  // the worker leaves: it sends no more requests
      if (header[1] == 2) finish_.store(true);  // it was stopped by a signal: so is the run
      requests_left -= left[static_cast<size_t>(src)];
      left[static_cast<size_t>(src)] = 0;
      release_held(stop ? AsyncReply::diverged : finish_.load() ? AsyncReply::finished : AsyncReply::go_on);
      continue;
    }
    // On the trace (rank 0's communication track): from the gradient's arrival to the reply's dispatch.
    const double trace_start = trace::on() ? trace::now_us() : -1.0;
    comm_.recv(src, grad_.data(), bytes, kTagGrad);
    --requests_left;
    --left[static_cast<size_t>(src)];
    ++clock[static_cast<size_t>(src)];
    const bool finished = !stop && finish_.load();
    const int64_t version_before = version;
    if (!stop && !finished) {
      const int64_t staleness = version - header[0];
      staleness_sum += static_cast<double>(staleness);
      stats_.staleness_max = std::max(stats_.staleness_max, staleness);
      stats_.staleness_histogram[static_cast<size_t>(std::min<int64_t>(staleness, 16))]++;
      try {
        settle();  // the replies in flight read w_
        opt_.step(w_, grad_, sched_.lr(version / size), sent_[static_cast<size_t>(src)]);
        ++version;
      } catch (const optim::NonFiniteGradient& e) {
        stop = true;
        stats_.diverged = true;
        // The optimizer's detail without its own "at step N" (its step count is the update count again).
        stats_.diverged_detail = std::string("non-finite gradient at update ") + std::to_string(version + 1) +
                                 " from rank " + std::to_string(src) + ": " + e.detail();
      }
    }
    const AsyncReply answer = stop ? AsyncReply::diverged : finished ? AsyncReply::finished : AsyncReply::go_on;
    if (answer == AsyncReply::go_on && !may_go(src)) {
      held.push_back(src);
      ++stats_.held_replies;
    } else {
      reply(src, answer);
    }
    release_held(answer);  // this push may have been the slowest worker's
    if (trace_start >= 0)
      // A push answered after the run stopped (finished or diverged) updates nothing: named so.
      trace::span((version > version_before ? "server: update from rank " : "server: push from rank ") +
                      std::to_string(src) + (version > version_before ? "" : " (not applied: the run stopped)"),
                  "communication", trace::kCommunicationTrack, trace_start, trace::now_us(),
                  {{"version", version}, {"held", held.size()}});
  }
  release_held(stop ? AsyncReply::diverged : AsyncReply::finished);  // none should be left: a safety net
  settle();
  stats_.updates = version;
  stats_.staleness_mean = version > 0 ? staleness_sum / static_cast<double>(version) : 0.0;
  stats_.traffic = comm_.traffic();
}

AsyncReply AsyncWorker::push_pull(std::span<const float> grads, std::span<float> params) {
  // Every shard's get posted before its put, all at once, waited for once: the servers work at once, and a reply
  // finds its receive posted.
  const size_t n = shards_.size();
  std::vector<int64_t> headers(2 * n), replies(2 * n);
  std::vector<SendPiece> puts;
  std::vector<RecvPiece> gets;
  for (size_t k = 0; k < n; ++k) {
    const ParamShard& sh = shards_[k];
    const int server = static_cast<int>(k);
    const size_t bytes = (sh.end - sh.begin) * sizeof(float);
    headers[2 * k] = versions_[k], headers[2 * k + 1] = 0;
    gets.push_back({server, &replies[2 * k], kHeaderBytes, kTagReplyHeader});
    gets.push_back({server, params.data() + sh.begin, bytes, kTagWeights});
    puts.push_back({server, &headers[2 * k], kHeaderBytes, kTagHeader});
    puts.push_back({server, grads.data() + sh.begin, bytes, kTagGrad});
  }
  comm_.exchange(puts, gets);
  AsyncReply answer = AsyncReply::go_on;
  for (size_t k = 0; k < n; ++k) {
    versions_[k] = replies[2 * k];
    const auto r = static_cast<AsyncReply>(replies[2 * k + 1]);
    if (r == AsyncReply::diverged || (r == AsyncReply::finished && answer == AsyncReply::go_on)) answer = r;
  }
  return answer;
}

void AsyncWorker::leave(bool stop_all) {
  int64_t header[2] = {0, stop_all ? 2 : 1};
  for (size_t k = 0; k < shards_.size(); ++k) comm_.send(static_cast<int>(k), header, kHeaderBytes, kTagHeader);
}

std::vector<ParamShard> shard_params(const optim::ParamTable& table, int servers) {
  const auto& t = table.tensors();
  if (servers < 1 || static_cast<size_t>(servers) > t.size())
    throw BadInput("/reducer/servers: " + std::to_string(servers) + " server shards for a model of " +
                   std::to_string(t.size()) + " tensors; a shard holds whole tensors");
  // The tensors must tile [0, buffer_size) in table order: a shard is then one contiguous range.
  size_t at = 0;
  for (const auto& x : t) {
    if (x.offset != at) throw RunFailed("sharded parameter server: the parameter table's tensors are not contiguous in order");
    at += x.size;
  }
  const double total = static_cast<double>(at);
  std::vector<ParamShard> shards;
  size_t begin = 0, i = 0, sum = 0;
  for (int s = 0; s < servers; ++s) {
    const int after = servers - s - 1;  // shards still to cut after this one: each needs a tensor
    const double target = total * (s + 1) / servers;
    // At least one tensor; then more while the running count is below the target and tensors remain.
    do {
      sum += t[i].size;
      ++i;
    } while (i + static_cast<size_t>(after) < t.size() && static_cast<double>(sum) < target);
    if (s + 1 == servers) sum = at, i = t.size();
    shards.push_back({begin, sum});
    begin = sum;
  }
  return shards;
}

optim::ParamTable shard_table(const optim::ParamTable& table, const ParamShard& shard) {
  std::vector<optim::TensorInfo> in;
  for (optim::TensorInfo x : table.tensors())
    if (x.offset >= shard.begin && x.offset + x.size <= shard.end) {
      x.offset -= shard.begin;
      in.push_back(std::move(x));
    }
  return optim::ParamTable(std::move(in));
}

namespace {
// A row of async_stats_row: per server updates, staleness mean, max, held replies, diverged, bytes received and
// sent, then the worker's bytes (sent and received) and steps, then the 17 histogram bins.
constexpr size_t kHistogramAt = 9, kFields = kHistogramAt + 17;
}  // namespace

std::vector<double> async_stats_row(const AsyncStats* server, const CommTraffic& worker, int64_t worker_steps) {
  std::vector<double> row(kFields, 0.0);
  if (server) {
    row[0] = static_cast<double>(server->updates), row[1] = server->staleness_mean;
    row[2] = static_cast<double>(server->staleness_max), row[3] = static_cast<double>(server->held_replies);
    row[4] = server->diverged ? 1 : 0;
    row[5] = static_cast<double>(server->traffic.received_bytes);
    row[6] = static_cast<double>(server->traffic.sent_bytes);
    for (size_t b = 0; b < 17 && b < server->staleness_histogram.size(); ++b)
      row[kHistogramAt + b] = static_cast<double>(server->staleness_histogram[b]);
  }
  row[7] = static_cast<double>(worker.sent_bytes + worker.received_bytes);
  row[8] = static_cast<double>(worker_steps);
  return row;
}

Json merged_stats(std::span<const double> rows, const AsyncStats& root, int servers) {
  const size_t ranks = rows.size() / kFields;
  if (rows.size() % kFields != 0 || ranks < static_cast<size_t>(servers))
    throw RunFailed("asynchronous parameter server: " + std::to_string(rows.size()) + " statistics for " +
                    std::to_string(servers) + " servers");
  AsyncStats m = root;  // server 0's bound and divergence detail
  m.updates = INT64_MAX, m.staleness_max = 0, m.held_replies = 0;
  m.staleness_histogram.assign(17, 0);
  double weighted = 0, shard_updates = 0;
  Json per = Json::array();
  for (int s = 0; s < servers; ++s) {
    const double* r = rows.data() + static_cast<size_t>(s) * kFields;
    m.updates = std::min(m.updates, static_cast<int64_t>(r[0]));  // pushes applied to every shard
    weighted += r[0] * r[1];
    shard_updates += r[0];
    m.staleness_max = std::max(m.staleness_max, static_cast<int64_t>(r[2]));
    m.held_replies += static_cast<int64_t>(r[3]);
    if (r[4] != 0 && !m.diverged) {
      m.diverged = true;
      m.diverged_detail = "a non-finite gradient in server " + std::to_string(s) + "'s shard";
    }
    for (size_t b = 0; b < 17; ++b) m.staleness_histogram[b] += static_cast<int64_t>(r[kHistogramAt + b]);
    per.push_back({{"updates", static_cast<int64_t>(r[0])}, {"staleness_mean", r[1]},
                   {"staleness_max", static_cast<int64_t>(r[2])}, {"held_replies", static_cast<int64_t>(r[3])},
                   {"bytes_received", static_cast<int64_t>(r[5])}, {"bytes_sent", static_cast<int64_t>(r[6])}});
  }
  m.staleness_mean = shard_updates > 0 ? weighted / shard_updates : 0.0;
  double worker_bytes = 0, worker_steps = 0;
  Json steps = Json::array();  // each worker's own steps (rank order): they differ when one runs ahead
  for (size_t k = 0; k < ranks; ++k) {
    worker_bytes += rows[k * kFields + 7], worker_steps += rows[k * kFields + 8];
    steps.push_back(static_cast<int64_t>(rows[k * kFields + 8]));
  }
  Json j = m.to_json();
  j["servers"] = servers;
  j["per_server"] = per;
  j["worker_steps"] = steps;
  j["worker_bytes_per_step"] = worker_steps > 0 ? worker_bytes / worker_steps : 0.0;
  j["traffic_note"] = "bytes as the Comm layer counted them: per server its requests and gradients received and its "
                      "replies and weights sent; per worker step its puts and gets, headers included, sent plus "
                      "received (the mean over every worker's steps; a worker that stops early adds its 16-byte "
                      "leave messages)";
  j["diverged"] = m.diverged;
  j["diverged_detail"] = m.diverged_detail;
  return j;
}

}  // namespace dtbench
