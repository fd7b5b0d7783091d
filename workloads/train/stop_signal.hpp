// SIGUSR1 and SIGTERM, what Slurm sends before a time limit or a preemption, ask the run to stop. The
// handler only records the signal; the ranks agree on it in the per-step consensus (step_consensus.hpp),
// so all of them stop at the same step boundary and checkpoint together.
#pragma once

#include <functional>

namespace dtbench {

void install_stop_signal_handlers();
// The last stop signal received by this process (0 = none).
int received_stop_signal();
// --inject-fault sigusr1: what the arrival of `sig` does, at once in this thread (a signal sent to the process reaches
// the watcher thread a moment later, so an injected one would stop the run a step later or not).
void note_stop_signal(int sig);
// While set, the watcher thread also calls `act` with each stop signal it takes (an empty function unsets it; the
// call that unsets it waits for a call under way). For a wait that a signal must end at once rather than at a step.
void set_stop_signal_action(std::function<void(int)> act);

}  // namespace dtbench
