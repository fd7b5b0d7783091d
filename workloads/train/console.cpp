#include "workloads/train/console.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/timer.hpp"

namespace dtbench {
namespace {

// A terminal the user watches. Under mpirun a rank's stdout is a pseudo-terminal of Open MPI's own whatever mpirun's
// output is (a file under sbatch, a pipe): the progress line's carriage returns and escapes then filled Slurm logs.
bool is_tty() { return ::isatty(STDOUT_FILENO) != 0 && std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr; }

}  // namespace

void Console::start(const std::string& name, int ranks, long global_batch, long per_rank, int64_t steps_per_epoch,
                    int64_t resumed_at) const {
  if (!on_) return;
  std::printf("dtbench train: %s on %d rank(s), global batch %ld (%ld per rank), %lld steps (%lld per epoch)%s\n",
              name.c_str(), ranks, global_batch, per_rank, static_cast<long long>(total_steps_),
              static_cast<long long>(steps_per_epoch),
              resumed_at > 0 ? (", resumed at step " + std::to_string(resumed_at)).c_str() : "");
}

void Console::progress(int64_t step, double images_per_second) {
  if (!on_ || !is_tty()) return;
  const double now = now_seconds();
  if (now - last_progress_ < 0.5) return;
  last_progress_ = now;
  std::printf("\r\033[Kstep %lld/%lld (%.0f%%) img/s %.0f", static_cast<long long>(step),
              static_cast<long long>(total_steps_), 100.0 * static_cast<double>(step) / static_cast<double>(total_steps_),
              images_per_second);
  std::fflush(stdout);
}

void Console::evaluation(const EvalPoint& p, double images_per_second) const {
  if (!on_) return;
  if (is_tty()) std::printf("\r\033[K");
  std::printf("epoch %.2f step %lld/%lld train_loss %.4f test_loss %.4f test_acc %.4f lr %.4g", p.epoch,
              static_cast<long long>(p.step), static_cast<long long>(total_steps_), p.train_loss, p.test_loss,
              p.test_accuracy, p.lr);
  if (p.b_simple) std::printf(" B_simple %.0f", *p.b_simple);
  std::printf(" img/s %.0f elapsed %.1fs\n", images_per_second, p.wall_seconds);
  std::fflush(stdout);
}

void Console::line(const std::string& text) const {
  if (on_) std::printf("%s\n", text.c_str());
}

}  // namespace dtbench
