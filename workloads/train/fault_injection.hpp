// --inject-fault, for tests of the preemption and failure paths: "sigusr1@STEP" is SIGUSR1 arriving at rank 0
// once STEP steps are done (as Slurm would send it); "kill@RANK:STEP" kills rank RANK with SIGKILL then;
// "nan-grad@SHARD:STEP" makes the averaged gradient of step STEP (1-based) not finite on the ranks holding
// model-parallel shard SHARD (every rank without model parallelism, whose one shard is 0), as an overflow in
// that shard's rows would; "slow-setup@RANK:MS" keeps rank RANK MS milliseconds longer in its set-up, as a slow
// node would (a stop signal sent once run_start is logged must still find every rank ready for it).
#pragma once

#include <cstdint>
#include <string>

namespace dtbench {

class FaultInjection {
 public:
  // Empty: no fault. Throws BadInput on anything else that is not one of the forms, before any work.
  explicit FaultInjection(const std::string& spec);
  // Throws BadInput for a fault that could never happen in this run: a rank beyond its `ranks`, a nan-grad SHARD
  // beyond its `shards` (the model-parallel group's size; the ranks when each rank's own gradient is stepped on, in
  // local SGD or asynchronous SGD; else 1), a step past `last_step` (/duration or --stop-at). (A STEP of 0 is
  // documented as injecting nothing.) And a stop signal the run would not stop for: synchronous ranks stop at the end
  // of the step after it, asynchronous workers before their next step (`asynchronous`), and a run that reaches its
  // last step finishes. `start_step`: the step a checkpoint starts the run at (0 without one); a step at or before it
  // happened in the attempt that wrote the checkpoint when `resumed` (--resume: a requeued job's same command, not
  // checked), and otherwise (--init-from) could never happen.
  void check(int ranks, int shards, int64_t last_step, bool asynchronous = false, int64_t start_step = 0,
             bool resumed = false) const;
  // Called after each step with the number of steps done.
  void after_step(int64_t done, int rank) const;
  // Called at the end of each rank's set-up, before the ranks meet to start.
  void end_of_setup(int rank) const;
  // Whether step `step` (1-based) of the ranks holding `shard` gets a non-finite gradient.
  bool poisons_gradient(int64_t step, int shard) const { return kind_ == Kind::nan_grad && step == step_ && shard == victim_; }

 private:
  enum class Kind { none, sigusr1, kill, nan_grad, slow_setup } kind_ = Kind::none;
  long long step_ = -1;      // sigusr1, kill, nan_grad: the step
  long long setup_ms_ = -1;  // slow_setup: the milliseconds
  int victim_ = -1;
};

}  // namespace dtbench
