// Turning uint8 images into float32 NCHW training and evaluation batches: normalisation and seeded
// augmentation (random crop with zero padding, horizontal flip).
//
// Normalisation: x = (p / 255 - mean[c]) / std[c] with p the uint8 pixel. The per-channel mean and
// standard deviation are computed from the training set (population statistics over every pixel of
// every training image, exact integer sums), not taken from published constants; for Fashion-MNIST they
// come out as mean 0.2860, std 0.3530, the commonly quoted values. Without normalisation x = p / 255.
//
// Augmentation follows torchvision's RandomCrop(size, padding=P) then RandomHorizontalFlip(): the image
// is padded by P pixels of raw value 0 (black; after normalisation that is -mean/std, not 0.0f), a
// window of the original size is cut at a uniformly random offset (dy, dx) in [-P, P]^2, and with
// probability 1/2 the result is mirrored left-right:
//     out(c, y, x) = in(c, y + dy, x' + dx), x' = flip ? W - 1 - x : x, and 0 where that is outside.
// The random draws come from Rng(seed, {stream::augment, epoch, sample index}) in the fixed order dy,
// dx, flip, so a sample's augmentation in an epoch is the same however many ranks there are and
// wherever it falls in a batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dtbench::data {

struct Dataset;

struct Normalization {
  std::vector<float> mean, std;  // per channel, in units of p / 255
};

// Population mean and standard deviation per channel of p / 255 over the whole data set.
Normalization channel_stats(const Dataset& ds);
// mean 0, std 1 for each of `channels`: the batch holds p / 255.
Normalization identity_normalization(int channels);

struct AugmentOptions {
  int random_crop_padding = 0;  // P; 0 = no crop
  bool horizontal_flip = false;
  bool enabled() const { return random_crop_padding > 0 || horizontal_flip; }
};

class BatchMaker {
 public:
  BatchMaker(Normalization norm, AugmentOptions augment, uint64_t seed);

  // Writes images ds[idx[i]] to out_nchw (idx.size() x C x H x W floats) and their labels to
  // out_labels (idx.size() ints). epoch selects the augmentation draws. No allocation.
  void make(const Dataset& ds, std::span<const uint32_t> idx, uint64_t epoch, float* out_nchw,
            int32_t* out_labels) const;

  const Normalization& normalization() const { return norm_; }
  const AugmentOptions& augment() const { return augment_; }

 private:
  Normalization norm_;
  std::vector<float> scale_, bias_;  // per channel: x = p * scale + bias
  AugmentOptions augment_;
  uint64_t seed_;
};

}  // namespace dtbench::data
