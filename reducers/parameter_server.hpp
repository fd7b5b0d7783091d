// Parameter server (the seeds' "all to 1" scheme; sharded over S servers as in the key-value stores of
// MXNet and Li et al. 2014).
//
// Terms: p ranks, S servers (ranks 0..S-1), the buffer split into S shards (shard s is block s of S
// nearly equal blocks) and server s owns shard s. Every rank is a worker, the servers included (a
// server's own gradient is part of the sum). Push: each worker sends shard s to server s; server s
// adds the p-1 incoming shards to its own. Pull: server s sends the summed shard back to every worker.
// Both phases run as p-1 rounds of a cyclic shift (in round k rank i sends to i+k and receives from
// i-k, where the partner is a server / the sender is a server), so S > 1 servers work at once and the
// blocking transfers never deadlock. S = 1 is the classic single server: its link carries 2(p-1) full
// buffers per allreduce, the bottleneck the seeds point out. S = p is a direct-exchange
// reduce-scatter + allgather.
//
// Summation order on server s: own shard, then the shards of ranks s-1, s-2, ... (mod p): fixed, and
// each shard is summed once and copied to everyone, so all ranks get the same bits.
//
// Bus-bandwidth factor: 2(p-1)/p, the allreduce factor of nccl-tests, as for every reducer, so the
// busbw column compares algorithms by time for the same operation. It is not the load on the server's
// link: per direction a server moves (p-1)/S + (S-1)/S buffers, (p+S-2)/S in all, which for S = 1 is
// p-1 buffers against the ring's 2(p-1)/p; that load is what makes the single server slow and is what
// the cost model charges (cost() below).
#pragma once

#include "reducers/allreduce.hpp"
#include "reducers/cost_terms.hpp"
#include "reducers/scratch.hpp"
#include "reducers/traffic.hpp"

namespace dtbench {

class ParameterServer : public Allreduce {
 public:
  ParameterServer(Comm& comm, int servers);
  std::string name() const override { return "parameter_server"; }
  int servers() const { return servers_; }
  void run(float* data, size_t count) override;
  // The alpha-beta-gamma terms of one allreduce (reducers/cost_terms.hpp).
  static CostTerms cost(int ranks, double bytes, const ReducerOptions& options, double eager_bytes);
  // The exact bytes each rank sends and receives in one allreduce (reducers/traffic.hpp).
  static std::vector<RankBytes> traffic(int ranks, size_t bytes, const ReducerOptions& options);

 private:
  int servers_;
  Scratch scratch_;
};

}  // namespace dtbench
