// The parameter table: how one flat parameter buffer (and its gradient buffer) splits into tensors.
//
// Every model keeps its parameters in one flat float buffer and its gradients in another of the same
// length. The table names each tensor's range and kind, so that per-layer rules (no weight decay on
// batch-norm and bias, LARS/LAMB trust ratios per layer) are decided here from the kind and need no
// special cases in the trainer or the model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtbench::optim {

enum class TensorKind {
  conv_weight,  // convolution filter
  fc_weight,    // fully connected (linear) weight matrix
  bias,         // additive bias of a conv or fc layer
  bn,           // batch-norm gamma or beta
};

std::string_view to_string(TensorKind kind);
// Parses "conv_weight", "fc_weight", "bias" or "bn"; throws BadInput naming `key` otherwise.
TensorKind tensor_kind_from_string(std::string_view text, const std::string& key);

// Bias and batch-norm tensors: the ones Goyal et al. 2017 and the MLPerf ResNet reference exclude from
// weight decay and from LARS/LAMB trust ratios.
inline bool is_bn_or_bias(TensorKind kind) { return kind == TensorKind::bias || kind == TensorKind::bn; }

struct TensorInfo {
  std::string name;
  size_t offset = 0;  // first element in the flat buffer
  size_t size = 0;    // number of elements
  TensorKind kind = TensorKind::conv_weight;
  size_t rows = 0;    // a weight's output channels or features (its leading dimension); 0 = not given
};

class ParamTable {
 public:
  ParamTable() = default;
  // Checks that names are unique and ranges do not overlap; throws std::invalid_argument otherwise
  // (a table is built by code, not typed by users). Ranges need not be contiguous or sorted.
  explicit ParamTable(std::vector<TensorInfo> tensors);

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  size_t num_tensors() const { return tensors_.size(); }
  const TensorInfo& operator[](size_t i) const { return tensors_[i]; }
  // Length of the flat buffer the table describes: the largest offset + size.
  size_t buffer_size() const { return buffer_size_; }
  // Number of parameters covered by tensors (equals buffer_size() when there are no gaps).
  size_t num_params() const { return num_params_; }
  // A hash of names, ranges and kinds (FNV-1a), stored with optimizer state so that a state is never
  // restored into a different model.
  uint64_t fingerprint() const;

 private:
  std::vector<TensorInfo> tensors_;
  size_t buffer_size_ = 0;
  size_t num_params_ = 0;
};

}  // namespace dtbench::optim
