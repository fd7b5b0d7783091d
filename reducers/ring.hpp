// Ring allreduce: reduce-scatter then allgather around a ring (Patarasuk and Yuan 2009; the seeds'
// "ring", as Baidu used it).
//
// Terms: p ranks in a ring, each sends to its right neighbour (rank+1) and receives from its left
// (rank-1). The buffer is split into p chunks (chunk c is block c of p nearly equal blocks).
// Reduce-scatter, p-1 steps: in step s rank i sends chunk i-s and receives chunk i-s-1, adding it to its
// own copy (own + incoming partial sum: a fixed order). After it rank i holds the full sum of chunk
// i+1. Allgather, p-1 steps: the full chunks travel once around the ring and are copied into place,
// so every rank holds the same bits. Each rank sends and receives 2(p-1)/p of the buffer, the
// bandwidth optimum, at the price of 2(p-1) latencies.
//
// Chunked and streamed: each chunk transfer is cut into segments (ReducerOptions), each one
// a sendrecv into a cache-sized scratch buffer that is summed while hot; so a large buffer streams
// through the ring in segment-sized pieces instead of whole chunks, the scratch never exceeds one
// segment, and every link is busy in every step.
#pragma once

#include "reducers/allreduce.hpp"
#include "reducers/cost_terms.hpp"
#include "reducers/scratch.hpp"
#include "reducers/traffic.hpp"

namespace dtbench {

class Ring : public Allreduce {
 public:
  Ring(Comm& comm, const ReducerOptions& options) : Allreduce(comm), options_(options) {}
  std::string name() const override { return "ring"; }
  void run(float* data, size_t count) override;
  // The alpha-beta-gamma terms of one allreduce (reducers/cost_terms.hpp).
  static CostTerms cost(int ranks, double bytes, const ReducerOptions& options, double eager_bytes);
  // The exact bytes each rank sends and receives in one allreduce (reducers/traffic.hpp).
  static std::vector<RankBytes> traffic(int ranks, size_t bytes, const ReducerOptions& options);

 private:
  ReducerOptions options_;  // the segmenting rule
  Scratch scratch_;
};

}  // namespace dtbench
