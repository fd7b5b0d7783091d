// initialise() of model_description.hpp: the initial weights every backend starts from.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/rng.hpp"
#include "workloads/models/model_description.hpp"
#include "workloads/models/resnet_topology.hpp"
#include "workloads/models/table_index.hpp"

namespace dtbench::models {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

void initialise(const ModelSpec& spec, const ModelDescription& d, uint64_t seed, std::span<float> params,
                std::span<float> buffers) {
  if (params.size() != d.param_count() || buffers.size() != d.buffer_count()) {
    throw std::logic_error("initialise: the buffers do not match the model description");
  }
  const auto& table = d.params;
  for (size_t i = 0; i < table.size(); ++i) {
    const ParamInfo& t = table[i];
    float* w = params.data() + t.offset;
    Rng rng(seed, {kInitStream, uint64_t(t.init_index)});
    switch (t.kind) {
      case ParamInfo::conv_weight:
        // The ResNets: He et al. 2015, normal with variance 2 / fan_out (torchvision's mode="fan_out"). The
        // Simple CNN, for which Shallue et al. give none: PyTorch's nn.Conv2d default, as for fc weights.
        if (spec.arch != "simple_cnn") {
          // fan_out of the whole layer; a model-parallel shard's rows come from where the whole tensor's stream
          // has them, as below.
          const double out = double(t.full_rows > 0 ? t.full_rows : t.shape[0]);
          const double fan_out = out * double(t.shape[2]) * double(t.shape[3]);
          const double stddev = std::sqrt(2.0 / fan_out);
          for (size_t k = 0; k < size_t(t.row_begin) * (t.size / size_t(t.shape[0])); ++k) rng.normal();
          for (size_t k = 0; k < t.size; ++k) w[k] = float(stddev * rng.normal());
          break;
        }
        [[fallthrough]];
      case ParamInfo::fc_weight:
      case ParamInfo::bias: {
        // PyTorch's nn.Linear and nn.Conv2d default (kaiming_uniform with a = sqrt 5): U(-1/sqrt(fan_in),
        // 1/sqrt(fan_in)), fan_in (inputs x kernel area) of the layer the bias belongs to (the weight just
        // before it in the table).
        const ParamInfo& weight = t.kind == ParamInfo::bias ? table[i - 1] : t;
        const size_t row = t.size / size_t(t.shape[0]);
        const double bound = 1.0 / std::sqrt(double(weight.size / size_t(weight.shape[0])));
        // A shard's rows are drawn where the whole tensor's stream has them: the rows before are drawn and
        // dropped, so the shards of a model-parallel group hold exactly the whole model's initial weights.
        for (size_t k = 0; k < size_t(t.row_begin) * row; ++k) rng.uniform();
        for (size_t k = 0; k < t.size; ++k) w[k] = float(bound * (2.0 * rng.uniform() - 1.0));
        break;
      }
      case ParamInfo::bn: {
        std::fill_n(w, t.size, ends_with(t.name, ".weight") ? 1.0f : 0.0f);
        break;
      }
    }
  }
  if (spec.zero_init_residual) {
    const TableIndex index(d);
    for (const TopoBlock& b : resnet_topology(spec).blocks) {
      const TopoBn& last = b.bns.back();
      if (!index.holds(last.name + ".weight")) continue;  // another pipeline stage's block
      std::fill_n(params.data() + index.param(last.name + ".weight", {last.channels}), last.channels, 0.0f);
    }
  }
  for (const ParamInfo& b : d.buffers) {
    std::fill_n(buffers.data() + b.offset, b.size, ends_with(b.name, "_var") ? 1.0f : 0.0f);
  }
}

}  // namespace dtbench::models
