// The NCCL reducer against the MPI ring under mpiexec (CTest: mpiexec -n 1 and -n 2). Each rank uses the
// device of its local rank; NCCL needs one device per rank, so with fewer devices than ranks the ranks
// print why and exit 77, which CTest reports as skipped, or 1 where that is a failure
// (tests/gpu/device_requirement.hpp: a broken driver, or DTBENCH_EXPECT_GPU).
//
// With a device but fewer than ranks, the ranks share it: the host-staged ring still runs, then the NCCL
// part is reported skipped (exit 77).
//
// Checks, per size (0, 1, 1000, 2^20 + 3 floats):
//   - on the nccl-tests pattern (integer partial sums below 2^24: exact in any order) NCCL's result is
//     exactly the expected sum, on device buffers, blocking and through start/wait;
//   - on random data, NCCL's result equals the MPI ring's (reducers/ring.hpp on the host) to 1e-6 of the
//     largest magnitude: two ranks add each element once, so both give the same fp32 sum a + b; the
//     tolerance only covers a reduction order that differed;
//   - the ring through HostStagedReducer on device buffers equals the ring on the host bit for bit.
// Exit 0 when every check passed, 1 otherwise (every rank agrees on the outcome).
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/device.hpp"
#include "core/rng.hpp"
#include "reducers/mpi_comm.hpp"
#include "reducers/host_staged_reducer.hpp"
#include "reducers/nccl_reducer.hpp"
#include "reducers/pattern.hpp"
#include "reducers/reducer.hpp"
#include "reducers/registry.hpp"
#include "tests/gpu/device_requirement.hpp"

using namespace dtbench;

namespace {

std::vector<float> download(const gpu::DeviceBuffer& d, size_t n) {
  std::vector<float> v(n);
  if (n > 0) DTB_CUDA(cudaMemcpy(v.data(), d.get(), n * sizeof(float), cudaMemcpyDeviceToHost));
  return v;
}

void upload(gpu::DeviceBuffer& d, const std::vector<float>& v) {
  if (!v.empty()) DTB_CUDA(cudaMemcpy(d.get(), v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
}

int checks(MpiComm& comm, bool with_nccl) {
  int failures = 0;
  auto fail = [&](const char* what, size_t count, double detail) {
    std::fprintf(stderr, "rank %d: %s failed at %zu floats (%g)\n", comm.rank(), what, count, detail);
    ++failures;
  };
  // NCCL selects the rank's device; without NCCL the host-staged ring needs it selected here.
  std::unique_ptr<Reducer> nccl = with_nccl ? make_reducer("nccl", comm) : nullptr;
  if (!with_nccl) gpu::select_device(gpu::local_rank_from_env(comm.rank()), "nccl_mpi_check");
  auto ring = make_reducer("ring", comm);
  Reducer staged(std::make_unique<HostStagedReducer>(comm, make_allreduce("ring", comm)));
  const CheckPattern pattern(comm.size());
  for (size_t count : {size_t(0), size_t(1), size_t(1000), (size_t(1) << 20) + 3}) {
    gpu::DeviceBuffer d(std::max<size_t>(count, 1) * sizeof(float));
    std::vector<float> h(count);
    pattern.fill(comm.rank(), h.data(), count);
    if (with_nccl) {
      upload(d, h);
      nccl->allreduce(d.as<float>(), count);
      size_t wrong = pattern.count_wrong(download(d, count).data(), count);
      if (wrong != 0) fail("nccl exact pattern (blocking)", count, double(wrong));
      upload(d, h);
      nccl->start(d.as<float>(), count);
      nccl->wait();
      wrong = pattern.count_wrong(download(d, count).data(), count);
      if (wrong != 0) fail("nccl exact pattern (start/wait)", count, double(wrong));
    }

    Rng rng(77, {uint64_t(comm.rank())});
    std::vector<float> x(count);
    for (float& v : x) v = float(rng.normal());
    std::vector<float> ring_result = x;
    ring->allreduce(ring_result.data(), count);
    if (with_nccl) {
      upload(d, x);
      nccl->allreduce(d.as<float>(), count);
      const std::vector<float> nccl_result = download(d, count);
      double diff = 0.0, scale = 0.0;
      for (size_t i = 0; i < count; ++i) {
        diff = std::max(diff, std::fabs(double(nccl_result[i]) - ring_result[i]));
        scale = std::max(scale, std::fabs(double(ring_result[i])));
      }
      if (diff > 1e-6 * scale) fail("nccl vs ring", count, diff / scale);
    }
    upload(d, x);
    staged.allreduce(d.as<float>(), count);
    if (download(d, count) != ring_result) fail("host-staged ring vs ring", count, 0.0);
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  MpiComm comm;
  // The host-staged ring needs a device (ranks may share it); NCCL needs one per rank (ranks on one node
  // share its devices). Every rank asks, and the job takes the worst answer of each (run < skip < fail;
  // device_requirement.hpp says when a skip is a failure).
  using Outcome = test::DeviceRequirement::Outcome;
  auto agreed = [&](int needed, std::string& why) {
    const test::DeviceRequirement r = test::device_requirement(needed);
    int worst = int(r.outcome);
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    why = r.message;
    return Outcome(worst);
  };
  std::string why_any, why_nccl;
  const Outcome any = agreed(1, why_any);
  const Outcome nccl = agreed(comm.size(), why_nccl);
  if (any != Outcome::run) {
    if (comm.rank() == 0) std::printf("%s: %s\n", any == Outcome::skip ? "SKIP" : "FAILED", why_any.c_str());
    return any == Outcome::skip ? 77 : 1;
  }
  int failures = 0;
  try {
    failures = checks(comm, nccl == Outcome::run);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", comm.rank(), e.what());
    failures = 1;
  }
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (comm.rank() == 0) {
    std::printf("%s: %d failed check(s)\n", failures == 0 ? "OK" : "FAILED", failures);
    if (nccl != Outcome::run) {
      std::printf("%s: NCCL with %d ranks: %s (the host-staged ring ran)\n",
                  nccl == Outcome::skip ? "SKIP" : "FAILED", comm.size(), why_nccl.c_str());
    }
  }
  if (failures != 0 || nccl == Outcome::fail) return 1;
  return nccl == Outcome::skip ? 77 : 0;
}
