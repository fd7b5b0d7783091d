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
  // Offset of the parameter `name`; std::logic_error if it is missing or its shape differs.
  size_t param(const std::string& name, const std::vector<int64_t>& shape) const;
  // Offset of the running mean of batch norm `bn_name` (the variance follows it).
  size_t running_stats(const std::string& bn_name, int64_t channels) const;

 private:
  std::map<std::string, const ParamInfo*> params_, buffers_;
};

}  // namespace dtbench::models
