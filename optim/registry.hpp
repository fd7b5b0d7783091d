// The optimizer registry: each optimizer is one entry (its name, the config keys it adds to the common
// ones or gives its own default, and its factory). The "/optimizer" schema section, the name list and
// the defaults every option reader falls back to all come from these entries.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config_spec.hpp"
#include "core/json.hpp"
#include "optim/optimizer.hpp"

namespace dtbench::optim {

class NoiseSource;    // sgld.hpp
class SectionReader;  // section_reader.hpp

// The fused GPU kernel family an optimizer runs on with /backend "gpu" (optim/gpu); none: CPU only.
enum class FusedKernel { none, sgd, adam, lars, lamb };

struct OptimizerEntry {
  std::string name;
  config::Fields fields;  // keys beyond the common ones, or common keys with this optimizer's default
  // Builds the optimizer from its config section (absent keys take the defaults above).
  std::unique_ptr<Optimizer> (*make)(const SectionReader& section, ParamTable table, const CommonOptions& common,
                                     uint64_t seed, std::shared_ptr<const NoiseSource> sgld_noise);
  FusedKernel gpu = FusedKernel::none;
};

// Every optimizer, in the order of the config documentation.
const std::vector<OptimizerEntry>& optimizer_registry();

// The "/optimizer" schema section: the common keys plus one variant per registered optimizer.
const config::Node& optimizer_schema();

// The entry of optimizer `name`, or nullptr.
const OptimizerEntry* find_optimizer(const std::string& name);

// The optimizers with fused GPU kernels (gpu != none), in registry order.
const std::vector<std::string>& gpu_optimizer_names();

}  // namespace dtbench::optim
