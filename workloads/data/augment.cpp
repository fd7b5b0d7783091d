// Batch making: uint8 CHW images -> normalised, optionally augmented float32 NCHW (definitions in
// batch.hpp). This is on the training hot path, so each output row is one bounds computation, two
// fills for the zero padding and one straight multiply-add loop; nothing is allocated per image.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/rng.hpp"
#include "workloads/data/batch.hpp"
#include "workloads/data/dataset.hpp"

namespace dtbench::data {

BatchMaker::BatchMaker(Normalization norm, AugmentOptions augment, uint64_t seed)
    : norm_(std::move(norm)), augment_(augment), seed_(seed) {
  if (norm_.mean.size() != norm_.std.size())
    throw std::invalid_argument("BatchMaker: mean and std have different channel counts");
  if (augment_.random_crop_padding < 0)
    throw std::invalid_argument("BatchMaker: negative random crop padding");
  for (size_t c = 0; c < norm_.mean.size(); ++c) {
    // A constant channel has std 0; dividing by 1 instead keeps it finite (it carries no information).
    const double s = norm_.std[c] > 0.0f ? norm_.std[c] : 1.0;
    scale_.push_back(static_cast<float>(1.0 / (255.0 * s)));
    bias_.push_back(static_cast<float>(-norm_.mean[c] / s));
  }
}

void BatchMaker::make(const Dataset& ds, std::span<const uint32_t> idx, uint64_t epoch, float* out_nchw,
                      int32_t* out_labels) const {
  if (static_cast<size_t>(ds.channels) != scale_.size())
    throw std::invalid_argument("BatchMaker: normalisation has " + std::to_string(scale_.size()) +
                                " channels, data set " + ds.name + " has " + std::to_string(ds.channels));
  const int h = ds.height, w = ds.width, pad = augment_.random_crop_padding;
  const size_t plane = static_cast<size_t>(h) * static_cast<size_t>(w), image = ds.image_bytes();

  for (size_t i = 0; i < idx.size(); ++i) {
    const uint32_t sample = idx[i];
    if (sample >= ds.size())
      throw std::out_of_range("BatchMaker: sample " + std::to_string(sample) + " of " + std::to_string(ds.size()));
    out_labels[i] = ds.labels[sample];

    int dy = 0, dx = 0;
    bool flip = false;
    if (augment_.enabled()) {
      // Always the same three draws in the same order, so the flip decision does not depend on
      // whether cropping is on.
      Rng rng(seed_, {stream::augment, epoch, sample});
      dy = static_cast<int>(rng.below(static_cast<uint64_t>(2 * pad + 1))) - pad;
      dx = static_cast<int>(rng.below(static_cast<uint64_t>(2 * pad + 1))) - pad;
      flip = rng.below(2) == 1 && augment_.horizontal_flip;
    }
    // Output columns [x0, x1) read inside the source row; the rest is padding. Without flip the source
    // column is x + dx, with flip it is w - 1 - x + dx.
    const int x0 = std::clamp(flip ? dx : -dx, 0, w);
    const int x1 = std::clamp(flip ? w + dx : w - dx, x0, w);

    const uint8_t* src = ds.image(sample);
    float* dst = out_nchw + i * image;
    for (size_t c = 0; c < scale_.size(); ++c) {
      const float scale = scale_[c], bias = bias_[c];  // raw pixel 0 (the padding) maps to bias
      for (int y = 0; y < h; ++y) {
        float* out = dst + c * plane + static_cast<size_t>(y) * w;
        const int sy = y + dy;
        if (sy < 0 || sy >= h) {
          std::fill(out, out + w, bias);
          continue;
        }
        const uint8_t* row = src + c * plane + static_cast<size_t>(sy) * w;
        std::fill(out, out + x0, bias);
        if (flip) {
          const int last = w - 1 + dx;
          for (int x = x0; x < x1; ++x) out[x] = static_cast<float>(row[last - x]) * scale + bias;
        } else {
          for (int x = x0; x < x1; ++x) out[x] = static_cast<float>(row[x + dx]) * scale + bias;
        }
        std::fill(out + x1, out + w, bias);
      }
    }
  }
}

}  // namespace dtbench::data
