// `dtbench pbt SPEC --out DIR [--dry-run] [--submit [--poll S] [--timeout S]]`: population-based training
// (spec.hpp). Each member interval is a `dtbench train` run of K = /slurm/nodes x /slurm/tasks_per_node ranks:
// here, at most /local/concurrency at once (mpirun -np K when K > 1), tied to this process (SIGUSR1 when it
// dies: the member checkpoints as preempted); or with --submit an sbatch job each (DIR/scripts/<run>.sbatch: the
// sweeps' script, --requeue and USR1 before the time limit), every member of an interval submitted at once and
// the queue polled until they have left it (DIR/jobs.json lists every submission).
//
//   DIR/spec.json      the spec as given (base inlined)
//   DIR/lineage.json   who continued whom with which hyperparameters at each ready point (lineage.hpp)
//   DIR/configs/       each member interval's run config (<run>.json)
//   DIR/runs/          records (<run>.json), MLLOG files, output (<run>.out, <run>.err) and checkpoints
//                      (<run>.ckpt/: an interval's are removed once the next interval is recorded)
//   DIR/.lock          held (flock) while a dtbench pbt works on DIR, and by the member processes it trains here
//                      (they inherit it): a second one on the same folder exits 1 until the last of them has exited
//
// Each interval trains every member from its checkpoint (dtbench train --init-from) to the next ready point
// (--stop-at; its config's /duration is the whole campaign, so that schedules and warmups span it), then
// exploits and explores (population.hpp). A member whose run fails is reported (its exit code and the
// tail of its error output) and replaced by a copy of a top member, never dropped. Rerunning the command on the
// same DIR continues an interrupted campaign: recorded intervals are kept, and in the interval under way a member
// run with a finished record is kept, a preempted one resumes from its checkpoint (every launch passes --resume),
// one whose job is still queued is waited for, and any other runs again from the interval's start; the lineage is
// the same (tests/pbt). Exit 2 for a bad spec, a DIR holding another spec's campaign (nothing written) or, without
// --submit, member jobs of DIR still in Slurm's queue; exit 1 when every member of an interval failed.
// A dtbench pbt --submit killed between a member's sbatch and its line in jobs.json leaves
// DIR/runs/<run>.submitting behind: the rerun looks for that run's job in the queue (by name and script) and
// waits for it instead of submitting the member again.
#pragma once

namespace CLI {
class App;
}

namespace dtbench {
void add_pbt_command(CLI::App& app);
}
