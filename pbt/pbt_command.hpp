// `dtbench pbt SPEC --out DIR [--dry-run]`: population-based training (spec.hpp) with its members trained as
// local `dtbench train` processes, at most /local/concurrency at once.
//
//   DIR/spec.json      the spec as given (base inlined)
//   DIR/lineage.json   who continued whom with which hyperparameters at each ready point (lineage.hpp)
//   DIR/configs/       each member interval's run config (<run>.json)
//   DIR/runs/          records (<run>.json), MLLOG files, output (<run>.out, <run>.err) and checkpoints
//                      (<run>.ckpt/: an interval's are removed once the next interval is recorded)
//   DIR/.lock          held (flock) while a dtbench pbt works on DIR: a second one on the same folder exits 1
//
// Each interval trains every member from its checkpoint (dtbench train --init-from) to the next ready point
// (--stop-at; its config's /duration is the whole campaign, so that schedules and warmups span it), then
// exploits and explores (population.hpp). A member whose run fails is reported (its exit code and the
// tail of its error output) and replaced by a copy of a top member, never dropped. Rerunning the command on the
// same DIR continues an interrupted campaign: recorded intervals are kept, and in the interval under way only
// the member runs without a finished record are run again, to the same lineage (tests/pbt). A member process
// outlives a killed dtbench pbt; wait for it before running again. Exit 2 for a bad spec or a DIR holding another
// spec's campaign (nothing written); exit 1 when every member of an interval failed.
#pragma once

namespace CLI {
class App;
}

namespace dtbench {
void add_pbt_command(CLI::App& app);
}
