// The GPU runtime parts that need no device, and the behaviour of a machine without one.
//
// - LossScaler: the sequence of scales and skip decisions against PyTorch's GradScaler rule written out by
//   hand (init 2^16; an overflow halves the scale and skips; 2000 good steps in a row double it), exact.
// - local_rank_from_env: OMPI_COMM_WORLD_LOCAL_RANK before MPI_LOCALRANKID before SLURM_LOCALID (an mpirun in a
//   Slurm job passes its ranks the batch shell's SLURM_LOCALID=0), else the fallback; a malformed value is
//   BadInput naming the variable.
// - the model spec check accepts the GPU's fp16 and names a bad precision.
// - which devices there are: no GPU and no driver are "absent", a driver older than the toolkit is "broken"
//   (classify_cuda_devices, on the runtime's answers written out), and what a GPU test does about it
//   (device_requirement: skip, or fail where DTBENCH_EXPECT_GPU says devices are there or the driver is broken).
// - every entry point that asks for the GPU: on a device it runs; without one (this build machine) it stops
//   with BadInput (exit 2) whose message says who asked and why: the model, the trainer adapter, the NCCL
//   reducer (also through make_reducer), the host-staging wrapper.
// - cuBLAS, opened on first use instead of linked: every function the layers call resolves, and its status
//   names are cuBLAS's own (no device needed).
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <functional>

#include <cuda_runtime_api.h>

#include "core/cuda_info.hpp"
#include "core/error.hpp"
#include "optim/gpu/fused_optimizer.hpp"
#include "reducers/host_staged_reducer.hpp"
#include "reducers/nccl_reducer.hpp"
#include "reducers/reducer.hpp"
#include "reducers/registry.hpp"
#include "reducers/thread_comm.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "workloads/gpu/cublas_api.hpp"
#include "workloads/gpu/gpu_model.hpp"
#include "workloads/gpu/gpu_train_model.hpp"
#include "workloads/gpu/loss_scaler.hpp"

namespace dtbench::test {
namespace {

using gpu::LossScaler;
using gpu::LossScalerOptions;

// First in this file: run alone (as CTest runs each case) or first, nothing has opened cuBLAS before it.
TEST(CublasApi, OpensOnFirstUseAndResolvesEveryFunction) {
  const char* soname = gpu::cublas_soname();
  EXPECT_EQ(::dlopen(soname, RTLD_NOW | RTLD_NOLOAD), nullptr) << "cuBLAS was loaded before its first use";
  const gpu::CublasApi& api = gpu::cublas_api();
  void* loaded = ::dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(loaded, nullptr) << "cublas_api() did not open " << soname;
  if (loaded != nullptr) ::dlclose(loaded);  // drops only the reference NOLOAD took
  EXPECT_NE(api.create, nullptr);
  EXPECT_NE(api.destroy, nullptr);
  EXPECT_NE(api.set_stream, nullptr);
  EXPECT_NE(api.set_math_mode, nullptr);
  EXPECT_NE(api.gemm_ex, nullptr);
  EXPECT_STREQ(api.status_name(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_STREQ(api.status_name(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
  EXPECT_STRNE(api.status_string(CUBLAS_STATUS_INVALID_VALUE), "");
}

TEST(LossScaler, BacksOffOnOverflowAndGrowsAfterTheInterval) {
  LossScalerOptions o;
  o.growth_interval = 3;
  LossScaler s(o);
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_FALSE(s.update(true));  // overflow: skip, halve
  EXPECT_EQ(s.scale(), 32768.0);
  EXPECT_TRUE(s.update(false));
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 32768.0);
  EXPECT_TRUE(s.update(false));  // third good step in a row: double
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_TRUE(s.update(false));
  EXPECT_FALSE(s.update(true));  // an overflow restarts the run of good steps
  EXPECT_FALSE(s.update(true));
  EXPECT_EQ(s.scale(), 16384.0);
  EXPECT_EQ(s.consecutive_skips(), 2);
  EXPECT_TRUE(s.update(false));
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 16384.0);
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 32768.0);
  EXPECT_EQ(s.skipped_steps(), 3);
  EXPECT_EQ(s.consecutive_skips(), 0);
}

TEST(LossScaler, DefaultIntervalIsTorchs2000) {
  LossScaler s;
  for (int i = 0; i < 1999; ++i) ASSERT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 131072.0);
}

TEST(LossScaler, NeverGrowsToInfinity) {
  LossScalerOptions o;
  o.init_scale = 1e308;
  o.growth_interval = 1;
  LossScaler s(o);
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 1e308);
}

TEST(LossScaler, DisabledKeepsScaleOneAndReportsOverflowAsNoStep) {
  LossScalerOptions o;
  o.enabled = false;
  LossScaler s(o);
  EXPECT_EQ(s.scale(), 1.0);
  EXPECT_TRUE(s.update(false));
  EXPECT_FALSE(s.update(true));
  EXPECT_EQ(s.scale(), 1.0);
  EXPECT_EQ(s.skipped_steps(), 0);
}

TEST(LossScaler, StateRoundTripGivesTheSameNextDecisions) {
  LossScalerOptions o;
  o.growth_interval = 4;
  LossScaler a(o);
  a.update(true);
  a.update(false);
  a.update(false);
  LossScaler b(o);
  b.load_state(a.save_state());
  for (bool overflow : {false, false, true, false}) {
    EXPECT_EQ(a.update(overflow), b.update(overflow));
    EXPECT_EQ(a.scale(), b.scale());
  }
  EXPECT_THROW(b.load_state(Json{{"scale", 2.0}}), BadInput);
  EXPECT_THROW(b.load_state(Json{{"scale", -1.0}, {"growth_tracker", 0}, {"skipped", 0}, {"consecutive_skips", 0}}),
               BadInput);
}

TEST(LossScaler, RejectsOptionsOutOfRange) {
  LossScalerOptions o;
  o.backoff_factor = 1.0;
  try {
    LossScaler s(o);
    FAIL() << "no error";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("backoff_factor must be in (0, 1)"), std::string::npos) << e.what();
  }
  o = {};
  o.growth_factor = 1.0;
  EXPECT_THROW(LossScaler{o}, BadInput);
  o = {};
  o.growth_interval = 0;
  EXPECT_THROW(LossScaler{o}, BadInput);
  o = {};
  o.init_scale = 0.0;
  EXPECT_THROW(LossScaler{o}, BadInput);
}

// Sets or clears environment variables for one test and restores them afterwards.
class LocalRankEnv : public ::testing::Test {
 protected:
  static constexpr const char* kVars[3] = {"SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"};
  void SetUp() override {
    for (const char* v : kVars) {
      const char* old = std::getenv(v);
      saved_.emplace_back(old != nullptr, old != nullptr ? old : "");
      unsetenv(v);
    }
  }
  void TearDown() override {
    for (size_t i = 0; i < 3; ++i) {
      if (saved_[i].first) setenv(kVars[i], saved_[i].second.c_str(), 1);
      else unsetenv(kVars[i]);
    }
  }
  std::vector<std::pair<bool, std::string>> saved_;
};

TEST_F(LocalRankEnv, LauncherVariablesInOrderElseFallback) {
  EXPECT_EQ(gpu::local_rank_from_env(5), 5);
  setenv("SLURM_LOCALID", "0", 1);  // the batch shell's, which mpirun passes on to every rank
  EXPECT_EQ(gpu::local_rank_from_env(5), 0);
  setenv("MPI_LOCALRANKID", "3", 1);
  EXPECT_EQ(gpu::local_rank_from_env(5), 3);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
  EXPECT_EQ(gpu::local_rank_from_env(5), 2);
}

TEST_F(LocalRankEnv, MalformedValueNamesTheVariable) {
  setenv("SLURM_LOCALID", "x1", 1);
  try {
    gpu::local_rank_from_env(0);
    FAIL() << "no error";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("SLURM_LOCALID='x1'"), std::string::npos) << e.what();
  }
  setenv("SLURM_LOCALID", "-1", 1);
  EXPECT_THROW(gpu::local_rank_from_env(0), BadInput);
}

TEST(GpuSpec, AcceptsFp16AndNamesABadPrecision) {
  models::ModelSpec s;
  s.arch = "resnet8";
  s.precision = "fp16";
  EXPECT_NO_THROW(gpu::validate(s));
  s.precision = "fp8";
  try {
    gpu::validate(s);
    FAIL() << "no error";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("precision 'fp8' is unknown (expected fp32, bf16 or fp16)"),
              std::string::npos)
        << e.what();
  }
  s.precision = "bf16";
  s.arch = "resnet9";
  EXPECT_THROW(gpu::validate(s), BadInput);
}

TEST(GpuOptimizerFactory, RejectsOptimizersWithoutKernelsAndBadValuesBeforeTheDevice) {
  optim::ParamTable table({{"w", 0, 10, optim::TensorKind::fc_weight}});
  try {
    gpu::make_gpu_optimizer(Json{{"name", "adagrad"}}, table, nullptr);
    FAIL() << "no error";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("'adagrad' has no fused GPU kernels (the gpu backend has sgd, adam, adamw, "
                                         "lars, lamb)"),
              std::string::npos)
        << e.what();
  }
  try {
    gpu::make_gpu_optimizer(Json{{"name", "sgd"}, {"momentum", 1.0}}, table, nullptr);
    FAIL() << "no error";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("/optimizer/momentum: must be in [0, 1), got 1"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(gpu::make_gpu_optimizer(Json{{"name", "lamb"}, {"trust_clip", -1.0}}, table, nullptr), BadInput);
  EXPECT_THROW(gpu::make_gpu_optimizer(Json{{"name", "adam"}, {"weight_decay", -1.0}}, table, nullptr), BadInput);
}

// ---- which devices there are, and what a test does about it ----------------------------------------------

// cudaError_t values, as the classification takes them (core/cuda_info.hpp).
constexpr int kSuccess = cudaSuccess, kNoDriver = cudaErrorInsufficientDriver, kNoDevice = cudaErrorNoDevice;

TEST(CudaDevices, ClassifiesNoGpuAndNoDriverAsAbsentAndAnOldDriverAsBroken) {
  using State = CudaDevices::State;
  const std::string name = "cudaErrorInsufficientDriver", text = "CUDA driver version is insufficient";
  // Two GPUs.
  CudaDevices d = classify_cuda_devices(kSuccess, "cudaSuccess", "no error", 2, 13000, 13000);
  EXPECT_EQ(d.state, State::usable);
  EXPECT_EQ(d.count, 2);
  EXPECT_EQ(d.reason, "");
  // A driver and no GPU, in the two ways the runtime says it.
  d = classify_cuda_devices(kSuccess, "cudaSuccess", "no error", 0, 13000, 13000);
  EXPECT_EQ(d.state, State::absent);
  EXPECT_EQ(d.reason, "cudaGetDeviceCount reports 0 devices");
  d = classify_cuda_devices(kNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected", -1, 13000, 13000);
  EXPECT_EQ(d.state, State::absent);
  EXPECT_EQ(d.count, 0);  // not the -1 the failed call left
  EXPECT_EQ(d.reason, "cudaGetDeviceCount: cudaErrorNoDevice: no CUDA-capable device is detected");
  // No driver at all (this build machine): cudaDriverGetVersion reports 0.
  d = classify_cuda_devices(kNoDriver, name, text, -1, 0, 13000);
  EXPECT_EQ(d.state, State::absent);
  EXPECT_EQ(d.reason, "no CUDA driver is installed (cudaGetDeviceCount: cudaErrorInsufficientDriver)");
  // A CUDA 12.2 driver under a CUDA 13.0 runtime: the same error, but a GPU node that must not look empty.
  d = classify_cuda_devices(kNoDriver, name, text, -1, 12020, 13000);
  EXPECT_EQ(d.state, State::broken);
  EXPECT_EQ(d.count, 0);
  EXPECT_EQ(d.reason,
            "the installed driver supports CUDA 12.2, older than the CUDA 13.0 runtime this dtbench was built with "
            "(cudaGetDeviceCount: cudaErrorInsufficientDriver); update the driver");
  // Any other failure is broken too.
  d = classify_cuda_devices(cudaErrorSystemDriverMismatch, "cudaErrorSystemDriverMismatch", "mismatch", 0, 13000,
                            13000);
  EXPECT_EQ(d.state, State::broken);
  EXPECT_EQ(d.reason, "cudaGetDeviceCount: cudaErrorSystemDriverMismatch: mismatch");
}

TEST(DeviceRequirement, SkipsOnlyWhereNothingIsExpectedAndFailsOnABrokenDriver) {
  using Outcome = DeviceRequirement::Outcome;
  const CudaDevices none{CudaDevices::State::absent, 0, "no CUDA driver is installed (x)"};
  const CudaDevices one{CudaDevices::State::usable, 1, ""};
  const CudaDevices broken{CudaDevices::State::broken, 0, "old driver"};
  // No expectation: a machine without a GPU skips, saying why.
  DeviceRequirement r = device_requirement(1, none, nullptr);
  EXPECT_EQ(r.outcome, Outcome::skip);
  EXPECT_EQ(r.message, "no CUDA device: no CUDA driver is installed (x)");
  EXPECT_EQ(device_requirement(1, none, "").outcome, Outcome::skip);
  EXPECT_EQ(device_requirement(1, none, "0").outcome, Outcome::skip);
  // DTBENCH_EXPECT_GPU=1: the same machine fails.
  r = device_requirement(1, none, "1");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message, "no CUDA device: no CUDA driver is installed (x) (DTBENCH_EXPECT_GPU=1 says there are 1)");
  // One GPU: a 1-device test runs; a 2-device test skips unless 2 are expected.
  EXPECT_EQ(device_requirement(1, one, "1").outcome, Outcome::run);
  r = device_requirement(2, one, "1");
  EXPECT_EQ(r.outcome, Outcome::skip);
  EXPECT_EQ(r.message, "needs 2 CUDA devices, 1 present");
  EXPECT_EQ(device_requirement(2, one, "2").outcome, Outcome::fail);
  // A broken driver fails with or without the variable.
  r = device_requirement(1, broken, nullptr);
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message, "CUDA device unusable: old driver");
  // A malformed value fails every test, naming the variable.
  for (const char* bad : {"yes", "-1", "1.5", "2000", " 1", "+1", "99999999999999999999"}) {
    r = device_requirement(1, one, bad);
    EXPECT_EQ(r.outcome, Outcome::fail) << bad;
    EXPECT_EQ(r.message, std::string("DTBENCH_EXPECT_GPU='") + bad +
                             "' is not a device count (an integer in [0, 1024])");
  }
}

TEST(CudaDevices, CountAndReasonAgreeAndRepeat) {
  const CudaDevices d = cuda_devices();
  EXPECT_EQ(gpu::device_count(), d.count);
  EXPECT_EQ(gpu::no_device_reason(), d.reason);
  EXPECT_EQ(d.state == CudaDevices::State::usable, d.count > 0);
  EXPECT_EQ(d.reason.empty(), d.count > 0);
  // Asking twice gives the same answer (a failed query's error was cleared, not left sticky).
  const CudaDevices again = cuda_devices();
  EXPECT_EQ(again.count, d.count);
  EXPECT_EQ(again.reason, d.reason);
}

// Where there is a device, f runs; where there is none, it is BadInput (exit 2) naming who asked and why.
void expect_by_device(const std::function<void()>& f, const std::string& who) {
  const CudaDevices d = cuda_devices();
  if (d.state == CudaDevices::State::usable) {
    EXPECT_NO_THROW(f()) << who;
    return;
  }
  try {
    f();
    FAIL() << who << ": no error";
  } catch (const BadInput& e) {
    const std::string m = e.what();
    const std::string why = d.state == CudaDevices::State::broken ? ": CUDA device unusable: " : ": no CUDA device: ";
    EXPECT_EQ(m.rfind(who + why + d.reason, 0), 0u) << m;
    EXPECT_EQ(e.code(), ExitCode::bad_input);
  }
}

TEST(CudaDevices, EveryGpuEntryPointRunsOnADeviceAndIsBadInputWithout) {
  models::ModelSpec s;
  s.arch = "resnet8";
  expect_by_device([&] { gpu::select_device(0, "train"); }, "train");
  expect_by_device([&] { gpu::GpuModel m(s, 1); }, "gpu model");
  expect_by_device([&] { gpu::GpuTrainModel m(s, 1, 0, Json{{"name", "sgd"}}); }, "model");
  optim::ParamTable table({{"w", 0, 10, optim::TensorKind::fc_weight}});
  expect_by_device([&] { gpu::make_gpu_optimizer(Json{{"name", "sgd"}}, table, nullptr); }, "gpu optimizer sgd");
  run_ranks(1, [&](Comm& comm) {
    // One rank is a valid NCCL communicator, so these run on any machine with a device.
    expect_by_device([&] { NcclReducer r(comm); }, "reducer nccl");
    expect_by_device([&] { make_reducer("nccl", comm); }, "reducer nccl");
    expect_by_device([&] { HostStagedReducer r(comm, make_allreduce("ring", comm)); }, "reducer ring on device buffers");
  });
}

}  // namespace
}  // namespace dtbench::test
