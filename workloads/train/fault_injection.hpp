// --inject-fault, for tests of the preemption and failure paths: "sigusr1@STEP" raises SIGUSR1 on rank 0
// once STEP steps are done (as Slurm would send it); "kill@RANK:STEP" kills rank RANK with SIGKILL then.
#pragma once

#include <cstdint>
#include <string>

namespace dtbench {

class FaultInjection {
 public:
  // Empty: no fault. Throws BadInput on anything else that is not one of the two forms, before any work.
  explicit FaultInjection(const std::string& spec);
  // Called after each step with the number of steps done.
  void after_step(int64_t done, int rank) const;

 private:
  enum class Kind { none, sigusr1, kill } kind_ = Kind::none;
  long long step_ = -1;
  int victim_ = -1;
};

}  // namespace dtbench
