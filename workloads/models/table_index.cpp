#include "workloads/models/table_index.hpp"

#include <stdexcept>

namespace dtbench::models {

TableIndex::TableIndex(const ModelDescription& d) : partial_(d.partial) {
  for (const auto& p : d.params) params_[p.name] = &p;
  for (const auto& b : d.buffers) buffers_[b.name] = &b;
}

size_t TableIndex::param(const std::string& name, const std::vector<int64_t>& shape) const {
  auto it = params_.find(name);
  if (it == params_.end() && partial_) return kNotHeld;
  if (it == params_.end()) throw std::logic_error("model: the parameter table has no tensor " + name);
  if (it->second->shape != shape) throw std::logic_error("model: tensor " + name + " has another shape in the table");
  return it->second->offset;
}

size_t TableIndex::running_stats(const std::string& bn_name, int64_t channels) const {
  auto mean = buffers_.find(bn_name + ".running_mean");
  auto var = buffers_.find(bn_name + ".running_var");
  if (mean == buffers_.end() && var == buffers_.end() && partial_) return kNotHeld;
  if (mean == buffers_.end() || var == buffers_.end()) {
    throw std::logic_error("model: the buffer table has no running statistics for " + bn_name);
  }
  if (mean->second->size != size_t(channels) || var->second->offset != mean->second->offset + size_t(channels)) {
    throw std::logic_error("model: running statistics of " + bn_name + " are not mean then variance");
  }
  return mean->second->offset;
}

}  // namespace dtbench::models
