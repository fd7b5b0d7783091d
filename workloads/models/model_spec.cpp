#include "workloads/models/model_spec.hpp"

#include <set>

#include "core/error.hpp"
#include "workloads/models/checkpointing.hpp"
#include "workloads/models/pipeline_units.hpp"

namespace dtbench::models {

std::string to_string(ParamInfo::Kind kind) {
  switch (kind) {
    case ParamInfo::conv_weight: return "conv_weight";
    case ParamInfo::fc_weight: return "fc_weight";
    case ParamInfo::bias: return "bias";
    case ParamInfo::bn: return "bn";
  }
  return "unknown";
}

namespace {

const std::set<std::string> kCifarArchs = {"resnet8", "resnet20", "resnet32", "resnet56"};
const std::set<std::string> kImagenetArchs = {"resnet18", "resnet50"};

bool is_resnet(const std::string& arch) { return kCifarArchs.count(arch) || kImagenetArchs.count(arch); }

}  // namespace

RowRange shard_rows(int64_t rows, int shards, int shard) {
  return {rows * shard / shards, rows * (shard + 1) / shards};
}

// The rule for inputs: every stage that downsamples halves the resolution, and we require each halving to be
// exact, so the input height and width must be multiples of the total downsampling factor: 4 for the
// CIFAR-style networks (two stride-2 stages; 28 -> 7, 32 -> 8) and the Simple CNN (two 2x2 max pools), 32 for
// ResNet-18/50 (stride-2 stem, max pooling, three stride-2 stages; 224 -> 7). This rejects e.g. ResNet-50 on
// 28 x 28, whose last stages would otherwise work on windows made mostly of padding.
void validate(const ModelSpec& s) {
  const std::string where = "model spec: ";
  if (!is_resnet(s.arch) && s.arch != "mlp" && s.arch != "simple_cnn") {
    throw BadInput(where + "arch '" + s.arch +
                   "' is unknown (expected resnet8, resnet20, resnet32, resnet56, resnet18, resnet50, mlp or "
                   "simple_cnn)");
  }
  if (s.precision != "fp32" && s.precision != "bf16") {
    throw BadInput(where + "precision '" + s.precision + "' is unknown (expected fp32 or bf16)");
  }
  if (s.in_c < 1 || s.in_h < 1 || s.in_w < 1) {
    throw BadInput(where + "input shape " + std::to_string(s.in_c) + "x" + std::to_string(s.in_h) + "x" +
                   std::to_string(s.in_w) + " must be positive in every dimension");
  }
  if (s.classes < 2) throw BadInput(where + "classes must be at least 2, got " + std::to_string(s.classes));
  if (!(s.label_smoothing >= 0.0f && s.label_smoothing < 1.0f)) {
    throw BadInput(where + "label_smoothing must be in [0, 1), got " + std::to_string(s.label_smoothing));
  }
  if (!(s.dropout >= 0.0f && s.dropout < 1.0f)) {
    throw BadInput(where + "dropout must be in [0, 1), got " + std::to_string(s.dropout));
  }
  if (s.shards < 1 || s.shard < 0 || s.shard >= s.shards)
    throw BadInput(where + "shard " + std::to_string(s.shard) + " of " + std::to_string(s.shards) + " is out of range");
  // (describe() checks that every split layer has at least one output unit per shard.)
  if (s.stages > 1) {
    const int units = pipeline_units(s);
    if (s.stages > units)
      throw BadInput("/parallel/pipeline_stages: " + std::to_string(s.stages) + " stages are more than arch " + s.arch +
                     "'s " + std::to_string(units) + " pipeline units (layers a stage boundary may follow)");
    if (s.stage < 0 || s.stage >= s.stages || s.first_unit < 0 || s.first_unit >= s.end_unit || s.end_unit > units)
      throw BadInput(where + "pipeline stage " + std::to_string(s.stage) + " of " + std::to_string(s.stages) +
                     " with units [" + std::to_string(s.first_unit) + ", " + std::to_string(s.end_unit) +
                     ") is out of range");
    if (s.shards > 1) throw BadInput(where + "tensor model parallelism and pipeline stages do not combine");
  }
  if (s.ghost_batch < 0) throw BadInput(where + "ghost_batch must be >= 0, got " + std::to_string(s.ghost_batch));
  const int units = checkpoint_units(s);
  if (s.checkpoint_segments < 0 || s.checkpoint_segments > units) {
    throw BadInput("/model/checkpoint_segments: must be in [0, " + std::to_string(units) + "] for arch " + s.arch +
                   " (its checkpoint units), got " + std::to_string(s.checkpoint_segments));
  }
  const bool cnn = s.arch == "simple_cnn";
  if (cnn && (s.conv_filters.size() != 2 || s.conv_filters[0] < 1 || s.conv_filters[1] < 1)) {
    throw BadInput(where + "conv_filters must be two filter counts >= 1 for arch simple_cnn");
  }
  if (!cnn && !s.conv_filters.empty()) {
    throw BadInput(where + "conv_filters applies only to arch simple_cnn, not to arch " + s.arch);
  }
  if (s.arch == "mlp" || cnn) {
    if (s.hidden < 1) {
      throw BadInput(where + "hidden must be at least 1 for arch " + s.arch + ", got " + std::to_string(s.hidden));
    }
    if (s.zero_init_residual) {
      throw BadInput(where + "zero_init_residual applies only to ResNets, not to arch " + s.arch);
    }
    if (s.ghost_batch != 0) {
      throw BadInput(where + "ghost_batch applies only to ResNets (the archs with batch norm), not to arch " + s.arch);
    }
    if (s.arch == "mlp") return;
  } else if (s.hidden != 0) {
    throw BadInput(where + "hidden applies only to archs mlp and simple_cnn, got hidden = " +
                   std::to_string(s.hidden) + " for arch " + s.arch);
  }
  const int factor = kImagenetArchs.count(s.arch) ? 32 : 4;
  if (s.in_h % factor != 0 || s.in_w % factor != 0) {
    throw BadInput("/model/arch: the input " + std::to_string(s.in_h) + "x" + std::to_string(s.in_w) + " (/data) does not fit " +
                   s.arch + ": it downsamples by " + std::to_string(factor) +
                   ", so height and width must be multiples of " + std::to_string(factor) +
                   (factor == 4 ? " (e.g. 28 or 32)" : " (e.g. 224)"));
  }
}

}  // namespace dtbench::models
