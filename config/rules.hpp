// The cross-field rules of a run config, in one list: every rule that relates two keys, a key and the
// rank count, or a key and the machine the run starts on. config::resolve checks them (all but the
// machine's) before anything starts; the trainer checks them all once it knows its machine.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace dtbench::config {

// What a rule needs besides the resolved config.
enum class Needs { config, ranks, machine };

// A broken rule: its message, and where the key it names lies below the rule's pointer ("" or e.g. "/1").
struct Broken {
  std::string message;
  std::string below = {};
};

struct Rule {
  std::string pointer;  // the key the error names
  Needs needs;
  // The message when the rule is broken by a resolved config on `ranks` ranks, else nothing.
  std::function<std::optional<Broken>(const Json& config, int ranks)> broken;
};

// Every rule, in the order they are checked.
const std::vector<Rule>& rules();

// Checks a resolved config on `ranks` ranks: the rules that need the rank count only when ranks > 0,
// those about this machine (a CUDA build, a usable device) only with on_this_machine. Throws BadInput
// "<pointer>: <message>" for the first broken rule.
void check_rules(const Json& config, int ranks, bool on_this_machine);

// Checks a resolved config on `ranks` ranks over `nodes` nodes of a launcher (a sweep point's Slurm section), which
// the reducer sees at run time: shared_memory on one node only, and a parameter server among the hierarchical
// reducer's node leaders (the launcher's nodes, or /reducer/ranks_per_node's) with at most one server per leader.
// Throws BadInput "<pointer>: <message>".
void check_node_rules(const Json& config, int ranks, int nodes);

// The step at which a run of `parallel` section starts local SGD: 0 for local_sgd, post-local SGD's switch
// (switch_step, else switch_epoch epochs), and past the run (total_steps + 1) for every other mode.
int64_t first_local_step(const Json& parallel, int64_t steps_per_epoch, int64_t total_steps);
// Local and post-local SGD's phases against the run's length: BadInput when post-local SGD switches at step 0 or not
// before the last step (it would be local SGD or synchronous SGD throughout) or /parallel/local_steps is longer than
// the local phase (the replicas would never be averaged). `train` checks it with its data's epoch, the rules where
// the config gives the data's size.
void check_local_sgd_phases(const Json& config, int64_t steps_per_epoch, int64_t total_steps);

// Checkpoint units of an arch for gradient checkpointing (/model/checkpoint_segments can be at most this);
// 0 for the mlp and for an unknown arch.
int checkpoint_units(const std::string& arch);
// Pipeline units of an arch (workloads/models/pipeline_units.hpp; tests/workloads compares the two).
int pipeline_units(const std::string& arch);
// Parameter tensors of an arch (a weight, a bias, a batch norm's scale and shift each; the models layer's parameter
// table, which tests/workloads compares): the most shards asynchronous SGD's servers can hold, whole tensors each.
int param_tensors(const std::string& arch);

}  // namespace dtbench::config
