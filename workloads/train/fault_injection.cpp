#include "workloads/train/fault_injection.hpp"

#include <chrono>
#include <csignal>
#include <charconv>
#include <climits>
#include <cstdint>
#include <optional>
#include <string_view>
#include <thread>

#include "core/error.hpp"
#include "workloads/train/stop_signal.hpp"

namespace dtbench {

namespace {

// A count written in decimal digits only (no sign, space, base prefix or leading 0, as every other number of the
// command line: "sigusr1@06" was taken; a hunt) and at most `max`; nullopt otherwise.
std::optional<long long> count(std::string_view s, long long max) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || s[0] < '0' || s[0] > '9' || (s[0] == '0' && s.size() > 1) || ec != std::errc() ||
      end != s.data() + s.size() || v > max)
    return std::nullopt;
  return v;
}

constexpr long long kMaxSetupMs = 600000;  // a slow node of up to 10 minutes

}  // namespace

FaultInjection::FaultInjection(const std::string& f) {
  if (f.empty()) return;
  const std::string_view text(f);
  const size_t at = text.find('@');
  const std::string_view kind = text.substr(0, at), rest = at == std::string_view::npos ? "" : text.substr(at + 1);
  const Kind k = kind == "sigusr1" ? Kind::sigusr1 : kind == "kill" ? Kind::kill : kind == "nan-grad" ? Kind::nan_grad
               : kind == "slow-setup" ? Kind::slow_setup : Kind::none;
  std::optional<long long> victim = 0, amount;
  if (k == Kind::sigusr1) {
    amount = count(rest, INT64_MAX);
  } else if (k != Kind::none && rest.find(':') != std::string_view::npos) {
    victim = count(rest.substr(0, rest.find(':')), INT32_MAX);
    amount = count(rest.substr(rest.find(':') + 1), k == Kind::slow_setup ? kMaxSetupMs : INT64_MAX);
  }
  if (k == Kind::none || !victim || !amount)
    throw BadInput("--inject-fault: expected sigusr1@STEP, kill@RANK:STEP, nan-grad@SHARD:STEP or slow-setup@RANK:MS "
                   "(whole numbers in decimal digits without a leading 0; MS at most " + std::to_string(kMaxSetupMs) + "), got \"" + f + "\"");
  kind_ = k;
  victim_ = static_cast<int>(*victim);
  (k == Kind::slow_setup ? setup_ms_ : step_) = *amount;
}

void FaultInjection::check(int ranks, int shards, int64_t last_step, bool asynchronous, int64_t start_step,
                           bool resumed) const {
  if ((kind_ == Kind::kill || kind_ == Kind::slow_setup) && victim_ >= ranks)
    throw BadInput("--inject-fault: " + std::to_string(victim_) + " is not a rank of this run's " +
                   std::to_string(ranks) + " (it would inject nothing)");
  if (kind_ == Kind::nan_grad && victim_ >= shards)
    throw BadInput("--inject-fault: nan-grad@" + std::to_string(victim_) + ": this run's gradients are in " +
                   std::to_string(shards) + (shards == 1 ? " shard (0)" : " shards (0 to " + std::to_string(shards - 1) + ")") +
                   " (it would inject nothing)");
  const bool at_a_step = kind_ == Kind::sigusr1 || kind_ == Kind::kill || kind_ == Kind::nan_grad;
  if (at_a_step && step_ > 0 && step_ <= start_step) {
    // A requeued job resumes with the command that injected it (README): the fault is behind it, as in the run
    // (after_step and poisons_gradient see later steps only). It refused to resume (found by a hunt).
    if (resumed) return;
    throw BadInput("--inject-fault: step " + std::to_string(step_) + " is not after the step --init-from starts at, " +
                   std::to_string(start_step) + " (it would inject nothing)");
  }
  if ((kind_ == Kind::sigusr1 || kind_ == Kind::kill || kind_ == Kind::nan_grad) && step_ > last_step)
    throw BadInput("--inject-fault: step " + std::to_string(step_) + " is past the run's last step, " +
                   std::to_string(last_step) + " (/duration, --stop-at; it would inject nothing)");
  // Synchronous ranks act on a stop signal at the end of the next step, asynchronous workers before it; a run that
  // reaches its last step ends as finished.
  const int64_t latest = asynchronous ? last_step - 1 : last_step - 2;
  if (kind_ == Kind::sigusr1 && step_ > 0 && step_ > latest)
    throw BadInput("--inject-fault: sigusr1@" + std::to_string(step_) + ": " +
                   (asynchronous ? std::string("the workers stop before their next step")
                                 : "the ranks stop at the end of the step after the signal, step " + std::to_string(step_ + 1)) +
                   ", and the run's last step is " + std::to_string(last_step) + " (/duration, --stop-at): it would " +
                   "finish, not be preempted (" +
                   (latest >= 1 ? "inject at most at step " + std::to_string(latest) : std::string("the run is too short")) + ")");
}

void FaultInjection::after_step(int64_t done, int rank) const {
  if (done != step_) return;
  if (kind_ == Kind::sigusr1 && rank == 0) note_stop_signal(SIGUSR1);
  if (kind_ == Kind::kill && rank == victim_) std::raise(SIGKILL);
}

void FaultInjection::end_of_setup(int rank) const {
  if (kind_ == Kind::slow_setup && rank == victim_) std::this_thread::sleep_for(std::chrono::milliseconds(setup_ms_));
}

}  // namespace dtbench
