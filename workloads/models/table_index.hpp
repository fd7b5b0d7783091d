// Name -> tensor of a model description's parameter and buffer tables: how a backend's layers find their
// ranges of the flat buffers, checking each shape, so a backend cannot drift from the description silently.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "workloads/models/model_description.hpp"

namespace dtbench::models {

class TableIndex {
 public:
  // d must outlive the index.
  explicit TableIndex(const ModelDescription& d);
  // Offset of the parameter `name`; std::logic_error if its shape differs or it is missing from a whole model's
  // table. A pipeline stage's table (ModelDescription::partial) lacks the other stages' tensors: kNotHeld for them,
  // which the layers of units the stage does not build never use.
  size_t param(const std::string& name, const std::vector<int64_t>& shape) const;
  // Offset of the running mean of batch norm `bn_name` (the variance follows it); kNotHeld likewise.
  size_t running_stats(const std::string& bn_name, int64_t channels) const;
  bool holds(const std::string& name) const { return params_.count(name) > 0; }
  static constexpr size_t kNotHeld = static_cast<size_t>(-1);

 private:
  std::map<std::string, const ParamInfo*> params_, buffers_;
  bool partial_ = false;
};

}  // namespace dtbench::models
