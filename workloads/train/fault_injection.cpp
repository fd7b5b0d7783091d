#include "workloads/train/fault_injection.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "core/error.hpp"

namespace dtbench {

FaultInjection::FaultInjection(const std::string& f) {
  if (f.empty()) return;
  // Each form must take the whole text (%n: the characters read), with a rank or shard >= 0 and a step >= 0.
  int used = -1;
  const auto whole = [&](int fields, int want) { return fields == want && used == int(f.size()); };
  if (whole(std::sscanf(f.c_str(), "sigusr1@%lld%n", &step_, &used), 1))
    kind_ = Kind::sigusr1;
  else if (whole(std::sscanf(f.c_str(), "kill@%d:%lld%n", &victim_, &step_, &used), 2))
    kind_ = Kind::kill;
  else if (whole(std::sscanf(f.c_str(), "nan-grad@%d:%lld%n", &victim_, &step_, &used), 2))
    kind_ = Kind::nan_grad;
  else if (whole(std::sscanf(f.c_str(), "slow-setup@%d:%lld%n", &victim_, &setup_ms_, &used), 2))
    kind_ = Kind::slow_setup;
  const bool has_rank = kind_ == Kind::kill || kind_ == Kind::nan_grad || kind_ == Kind::slow_setup;
  const long long amount = kind_ == Kind::slow_setup ? setup_ms_ : step_;
  if ((has_rank && victim_ < 0) || amount < 0) kind_ = Kind::none;
  if (kind_ == Kind::none)
    throw BadInput("--inject-fault: expected sigusr1@STEP, kill@RANK:STEP, nan-grad@SHARD:STEP or slow-setup@RANK:MS, "
                   "got \"" + f + "\"");
}

void FaultInjection::after_step(int64_t done, int rank) const {
  if (done != step_) return;
  if (kind_ == Kind::sigusr1 && rank == 0) std::raise(SIGUSR1);
  if (kind_ == Kind::kill && rank == victim_) std::raise(SIGKILL);
}

void FaultInjection::end_of_setup(int rank) const {
  if (kind_ == Kind::slow_setup && rank == victim_) std::this_thread::sleep_for(std::chrono::milliseconds(setup_ms_));
}

}  // namespace dtbench
