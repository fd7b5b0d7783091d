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

#include "reducers/exchange.hpp"
#include "reducers/reducer.hpp"

namespace dtbench {

class Ring : public Reducer {
 public:
  Ring(Comm& comm, const ReducerOptions& options) : Reducer(comm), options_(options) {}
  ~Ring() override { stop_comm_thread(); }
  std::string name() const override { return "ring"; }
  double bus_factor(int nranks) const override { return allreduce_bus_factor(nranks); }

 protected:
  void run(float* data, size_t count) override;

 private:
  ReducerOptions options_;  // the segmenting rule
  Scratch scratch_;
};

}  // namespace dtbench
