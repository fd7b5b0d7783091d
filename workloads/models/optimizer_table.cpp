#include "workloads/models/optimizer_table.hpp"

namespace dtbench::models {

optim::ParamTable optimizer_table(const std::vector<ParamInfo>& params) {
  auto kind = [](ParamInfo::Kind k) {
    switch (k) {
      case ParamInfo::conv_weight: return optim::TensorKind::conv_weight;
      case ParamInfo::fc_weight: return optim::TensorKind::fc_weight;
      case ParamInfo::bias: return optim::TensorKind::bias;
      case ParamInfo::bn: return optim::TensorKind::bn;
    }
    return optim::TensorKind::conv_weight;
  };
  std::vector<optim::TensorInfo> tensors;
  for (const auto& t : params) tensors.push_back({t.name, t.offset, t.size, kind(t.kind), t.shape.empty() ? 0 : size_t(t.shape[0])});
  return optim::ParamTable(std::move(tensors));
}

}  // namespace dtbench::models
