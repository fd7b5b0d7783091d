#include "optim/param_table.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

#include "core/error.hpp"

namespace dtbench::optim {

std::string_view to_string(TensorKind kind) {
  switch (kind) {
    case TensorKind::conv_weight: return "conv_weight";
    case TensorKind::fc_weight: return "fc_weight";
    case TensorKind::bias: return "bias";
    case TensorKind::bn: return "bn";
  }
  return "unknown";
}

TensorKind tensor_kind_from_string(std::string_view text, const std::string& key) {
  for (TensorKind k : {TensorKind::conv_weight, TensorKind::fc_weight, TensorKind::bias, TensorKind::bn}) {
    if (to_string(k) == text) return k;
  }
  throw BadInput(key + ": unknown tensor kind '" + std::string(text) +
                 "' (known: conv_weight, fc_weight, bias, bn)");
}

ParamTable::ParamTable(std::vector<TensorInfo> tensors) : tensors_(std::move(tensors)) {
  std::unordered_set<std::string> names;
  std::vector<std::pair<size_t, size_t>> ranges;  // (offset, index)
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorInfo& t = tensors_[i];
    if (!names.insert(t.name).second) throw std::invalid_argument("ParamTable: duplicate tensor name '" + t.name + "'");
    if (t.offset + t.size < t.offset) throw std::invalid_argument("ParamTable: range of '" + t.name + "' overflows");
    buffer_size_ = std::max(buffer_size_, t.offset + t.size);
    num_params_ += t.size;
    if (t.size > 0) ranges.emplace_back(t.offset, i);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t r = 1; r < ranges.size(); ++r) {
    const TensorInfo& prev = tensors_[ranges[r - 1].second];
    const TensorInfo& cur = tensors_[ranges[r].second];
    if (prev.offset + prev.size > cur.offset) {
      throw std::invalid_argument("ParamTable: tensors '" + prev.name + "' and '" + cur.name + "' overlap");
    }
  }
}

uint64_t ParamTable::fingerprint() const {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a, 64 bit
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ULL;
  };
  for (const TensorInfo& t : tensors_) {
    const uint64_t nums[3] = {t.offset, t.size, static_cast<uint64_t>(t.kind)};
    mix(t.name.data(), t.name.size());
    mix(nums, sizeof nums);
  }
  return h;
}

}  // namespace dtbench::optim
