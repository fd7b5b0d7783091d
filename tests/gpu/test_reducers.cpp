// Reducers on device buffers, ranks as threads of one process (reducers/thread_comm.hpp):
// - HostStagedReducer runs a host reducer on device buffers: its result equals the same reducer's on the
//   host bit for bit (same algorithm, same additions), also through start/wait after a producer stream.
//   Needs one device (any number of threads may share it).
// - NcclReducer sums exactly: the nccl-tests pattern (reducers/pattern.hpp) whose partial sums are
//   integers below 2^24, so any order gives the exact bits; on device and on host buffers, blocking and
//   asynchronous, on 1 rank (any GPU) and 2 ranks (NCCL needs one device per rank: two GPUs).
#include <gtest/gtest.h>

#include <mutex>

#include "core/cuda/cuda_check.hpp"
#include "reducers/host_staged_reducer.hpp"
#include "reducers/nccl_reducer.hpp"
#include "reducers/pattern.hpp"
#include "reducers/reducer.hpp"
#include "reducers/registry.hpp"
#include "reducers/thread_comm.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace dtbench::test {
namespace {

std::vector<float> rank_data(int rank, size_t n) { return random_floats(n, 1000 + uint64_t(rank)); }

TEST(HostStagedReducer, EqualsTheHostReducerBitForBit) {
  DTB_REQUIRE_DEVICE();
  const int ranks = 3;
  for (size_t count : {size_t(0), size_t(5), size_t(10000), size_t(300001)}) {
    std::vector<std::vector<float>> host_result(ranks), device_result(ranks);
    run_ranks(ranks, [&](Comm& comm) {
      DTB_CUDA(cudaSetDevice(0));
      const int r = comm.rank();
      std::vector<float> h = rank_data(r, count);
      make_reducer("ring", comm)->allreduce(h.data(), count);
      host_result[size_t(r)] = h;

      const std::vector<float> d0 = rank_data(r, count);
      gpu::DeviceBuffer d(std::max<size_t>(count, 1) * sizeof(float));
      cudaStream_t producer = nullptr;
      DTB_CUDA(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
      // The producer's copy is still in flight when the reducer starts: it must order itself after it.
      DTB_CUDA(cudaMemcpyAsync(d.get(), d0.data(), count * sizeof(float), cudaMemcpyHostToDevice, producer));
      Reducer staged(std::make_unique<HostStagedReducer>(comm, make_allreduce("ring", comm), producer));
      EXPECT_EQ(staged.name(), "ring");
      EXPECT_DOUBLE_EQ(staged.bus_factor(ranks), allreduce_bus_factor(ranks));
      staged.start(d.as<float>(), count);
      staged.wait();
      std::vector<float> out(count);
      if (count > 0) DTB_CUDA(cudaMemcpy(out.data(), d.get(), count * sizeof(float), cudaMemcpyDeviceToHost));
      device_result[size_t(r)] = out;
      DTB_CUDA(cudaStreamDestroy(producer));
    });
    for (int r = 0; r < ranks; ++r) EXPECT_EQ(device_result[size_t(r)], host_result[size_t(r)]) << count;
  }
}

void nccl_sums_exactly(int ranks) {
  const CheckPattern pattern(ranks);
  std::mutex m;
  std::vector<size_t> wrong;
  run_ranks(ranks, [&](Comm& comm) {
    auto reducer = make_reducer("nccl", comm);
    EXPECT_EQ(reducer->name(), "nccl");
    auto& nccl = dynamic_cast<NcclReducer&>(reducer->algorithm());
    EXPECT_EQ(nccl.device(), comm.rank());
    for (size_t count : {size_t(1), size_t(1000), size_t(1) << 20}) {
      std::vector<float> h(count);
      pattern.fill(comm.rank(), h.data(), count);
      gpu::DeviceBuffer d(count * sizeof(float));
      DTB_CUDA(cudaMemcpy(d.get(), h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
      reducer->allreduce(d.as<float>(), count);
      std::vector<float> out(count);
      DTB_CUDA(cudaMemcpy(out.data(), d.get(), count * sizeof(float), cudaMemcpyDeviceToHost));
      size_t w_dev = pattern.count_wrong(out.data(), count);

      // Asynchronous, after a producer stream.
      cudaStream_t producer = nullptr;
      DTB_CUDA(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
      DTB_CUDA(cudaMemcpyAsync(d.get(), h.data(), count * sizeof(float), cudaMemcpyHostToDevice, producer));
      nccl.set_producer_stream(producer);
      reducer->start(d.as<float>(), count);
      reducer->wait();
      nccl.set_producer_stream(nullptr);
      DTB_CUDA(cudaMemcpy(out.data(), d.get(), count * sizeof(float), cudaMemcpyDeviceToHost));
      w_dev += pattern.count_wrong(out.data(), count);
      DTB_CUDA(cudaStreamDestroy(producer));

      // Host memory goes through the reducer's device buffer.
      reducer->allreduce(h.data(), count);
      const size_t w_host = pattern.count_wrong(h.data(), count);
      std::lock_guard<std::mutex> lock(m);
      wrong.push_back(w_dev + w_host);
    }
  });
  for (size_t w : wrong) EXPECT_EQ(w, 0u);
}

// One rank is a valid communicator (the allreduce copies nothing and the sum is the rank's own data): the
// case a one-GPU machine can run. NCCL refuses two ranks on one device, so two ranks need two GPUs.
TEST(NcclReducer, SumsExactlyOnOneRank) {
  DTB_REQUIRE_DEVICES(1);
  nccl_sums_exactly(1);
}

TEST(NcclReducer, SumsExactlyOnTwoRanks) {
  DTB_REQUIRE_DEVICES(2);
  nccl_sums_exactly(2);
}

}  // namespace
}  // namespace dtbench::test
