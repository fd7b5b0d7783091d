#include "reducers/parameter_server.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "reducers/exchange.hpp"

namespace dtbench {
namespace {

void check_servers(int servers, int ranks) {
  if (servers < 1 || servers > ranks)
    throw BadInput("parameter_server: servers must be in 1.." + std::to_string(ranks) + " (the rank count), got " +
                   std::to_string(servers));
}

}  // namespace

ParameterServer::ParameterServer(Comm& comm, int servers) : Allreduce(comm), servers_(servers) {
  check_servers(servers, comm.size());
}

void ParameterServer::run(float* data, size_t count) {
  Comm& c = comm();
  const int p = c.size(), me = c.rank(), S = servers_;
  if (p == 1 || count == 0) return;
  auto shard_begin = [&](int s) { return block_begin(count, static_cast<size_t>(S), static_cast<size_t>(s)); };
  auto shard_len = [&](int s) { return shard_begin(s + 1) - shard_begin(s); };
  const bool server = me < S;
  float* scratch = scratch_.get((count + S - 1) / static_cast<size_t>(S));  // the largest shard
  const int tag = kTagParameterServer;

  // Push: in round k, send my copy of shard (me+k) to its server; as a server, receive my shard from
  // rank me-k and add it.
  for (int k = 1; k < p; ++k) {
    const int dst = (me + k) % p, src = (me - k + p) % p;
    const bool sending = dst < S;
    if (sending && server) {
      c.sendrecv(dst, data + shard_begin(dst), shard_len(dst) * sizeof(float), src, scratch,
                 shard_len(me) * sizeof(float), tag);
    } else if (sending) {
      c.send(dst, data + shard_begin(dst), shard_len(dst) * sizeof(float), tag);
    } else if (server) {
      c.recv(src, scratch, shard_len(me) * sizeof(float), tag);
    }
    if (server) sum_into(data + shard_begin(me), scratch, shard_len(me));
  }
  // Pull: in round k, as a server send my summed shard to rank me+k; receive shard (me-k) from its server.
  for (int k = 1; k < p; ++k) {
    const int dst = (me + k) % p, src = (me - k + p) % p;
    const bool receiving = src < S;
    if (server && receiving) {
      c.sendrecv(dst, data + shard_begin(me), shard_len(me) * sizeof(float), src, data + shard_begin(src),
                 shard_len(src) * sizeof(float), tag);
    } else if (server) {
      c.send(dst, data + shard_begin(me), shard_len(me) * sizeof(float), tag);
    } else if (receiving) {
      c.recv(src, data + shard_begin(src), shard_len(src) * sizeof(float), tag);
    }
  }
}

CostTerms ParameterServer::cost(int p, double n, const ReducerOptions& o, double eager) {
  // S servers each own n/S bytes. Push: p-1 rounds, each one shard of n/S bytes into every server
  // (alpha + n/S beta + n/S gamma); pull: p-1 rounds of n/S bytes out. For S = 1 the server's link
  // carries 2(p-1) n bytes, the bottleneck of the single server; for S = p it is the ring's volume.
  CostTerms t;
  const double P = p, S = std::min(o.servers, p);
  t.messages(2 * (P - 1), n / S, eager);
  t.beta = 2 * (P - 1) * n / S;
  t.gamma = (P - 1) * n / S;
  // Each server takes one client's shard at a time: a server and a client busy per server.
  t.concurrency = std::min(P, 2 * S);
  return t;
}

std::vector<RankBytes> ParameterServer::traffic(int p, size_t bytes, const ReducerOptions& o) {
  // From run(): every rank pushes each server's shard but its own (S - M(i) bytes, M(i) the bytes of
  // its own shard if it is a server, else 0) and pulls the same back; a server also receives its shard
  // from the p-1 others and sends the sum to them. So sent = received = S + (p-2) M(i): one server
  // (M = S) moves (p-1) S each way, each worker S (the seeds' "all to 1").
  check_servers(o.servers, p);
  std::vector<RankBytes> out(static_cast<size_t>(p));
  const size_t n = bytes / sizeof(float);
  if (p == 1) return out;
  for (int i = 0; i < p; ++i) {
    const uint64_t own = i < o.servers ? block_len(n, static_cast<size_t>(o.servers), static_cast<size_t>(i)) : 0;
    const uint64_t b = bytes + static_cast<uint64_t>(p - 2) * own * sizeof(float);
    out[static_cast<size_t>(i)] = {b, b};
  }
  return out;
}

}  // namespace dtbench
