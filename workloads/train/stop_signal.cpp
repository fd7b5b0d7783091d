#include "workloads/train/stop_signal.hpp"

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <functional>
#include <mutex>
#include <thread>

namespace dtbench {
namespace {

std::atomic<int> g_stop_signal{0};
std::mutex g_action_mutex;
std::function<void(int)> g_action;  // set_stop_signal_action's
extern "C" void on_stop_signal(int sig) { g_stop_signal.store(sig); }

sigset_t stop_signals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGUSR1);
  sigaddset(&stop, SIGTERM);
  return stop;
}

// A child forked by a library (Open MPI's singleton daemon) inherits the mask across exec: unblocked there, so that
// it still dies of SIGTERM.
extern "C" void unblock_in_child() {
  const sigset_t stop = stop_signals();
  pthread_sigmask(SIG_UNBLOCK, &stop, nullptr);
}

}  // namespace

// The stop signals are blocked in the calling thread before MPI and OpenMP start theirs, so every thread inherits
// the mask, and one watcher thread takes them with sigwait. A signal handled on a thread in the middle of a system
// call interrupts it: asynchronous SGD's worker aborted with a corrupted heap about once in eight runs whose rank
// got SIGTERM while it computed and communicated (found by a hunt; the handler alone only stored a flag). The
// handler stays installed for a thread started before (it then runs there, as before).
void install_stop_signal_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::signal(SIGUSR1, on_stop_signal);
    std::signal(SIGTERM, on_stop_signal);
    const sigset_t stop = stop_signals();
    pthread_atfork(nullptr, nullptr, unblock_in_child);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    std::thread([stop] {
      for (;;) {
        int sig = 0;
        if (sigwait(&stop, &sig) != 0) continue;
        g_stop_signal.store(sig);
        const std::lock_guard<std::mutex> lock(g_action_mutex);
        if (g_action) g_action(sig);
      }
    }).detach();
  });
}

int received_stop_signal() { return g_stop_signal.load(); }

void note_stop_signal(int sig) { g_stop_signal.store(sig); }

void set_stop_signal_action(std::function<void(int)> act) {
  const std::lock_guard<std::mutex> lock(g_action_mutex);
  g_action = std::move(act);
}

}  // namespace dtbench
