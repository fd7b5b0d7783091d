// What rank 0 prints while a run goes on: one line at the start, a progress line that rewrites itself
// (on a terminal only; plain lines under Slurm and in logs), one line per evaluation, and how it ended.
#pragma once

#include <cstdint>
#include <string>

#include "core/run_record.hpp"

namespace dtbench {

class Console {
 public:
  Console(bool rank0, int64_t total_steps) : on_(rank0), total_steps_(total_steps) {}

  void start(const std::string& name, int ranks, long global_batch, long per_rank, int64_t steps_per_epoch,
             int64_t resumed_at) const;
  // At most twice a second, on a terminal only.
  void progress(int64_t step, double images_per_second);
  void evaluation(const EvalPoint& p, double images_per_second) const;
  void line(const std::string& text) const;  // a whole line (rank 0 only)

 private:
  bool on_;
  int64_t total_steps_;
  double last_progress_ = 0;
};

}  // namespace dtbench
