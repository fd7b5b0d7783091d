#include "workloads/train/stop_signal.hpp"

#include <atomic>
#include <csignal>

namespace dtbench {
namespace {

std::atomic<int> g_stop_signal{0};
extern "C" void on_stop_signal(int sig) { g_stop_signal.store(sig); }

}  // namespace

void install_stop_signal_handlers() {
  std::signal(SIGUSR1, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

int received_stop_signal() { return g_stop_signal.load(); }

}  // namespace dtbench
