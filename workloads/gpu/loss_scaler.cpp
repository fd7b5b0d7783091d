#include "workloads/gpu/loss_scaler.hpp"

#include <cmath>
#include <string>

#include "core/error.hpp"

namespace dtbench::gpu {

LossScaler::LossScaler(const LossScalerOptions& options) : options_(options) {
  const auto bad = [](const std::string& what, double v) {
    throw BadInput("loss scaler: " + what + ", got " + std::to_string(v));
  };
  if (!(options_.init_scale > 0.0) || !std::isfinite(options_.init_scale)) bad("init_scale must be finite and > 0", options_.init_scale);
  if (!(options_.growth_factor > 1.0) || !std::isfinite(options_.growth_factor)) bad("growth_factor must be finite and > 1", options_.growth_factor);
  if (!(options_.backoff_factor > 0.0 && options_.backoff_factor < 1.0)) bad("backoff_factor must be in (0, 1)", options_.backoff_factor);
  if (options_.growth_interval < 1) bad("growth_interval must be >= 1", static_cast<double>(options_.growth_interval));
  scale_ = options_.enabled ? options_.init_scale : 1.0;
}

bool LossScaler::update(bool found_overflow) {
  if (!options_.enabled) {
    // Without scaling an overflow is a real divergence: the caller's non-finite check reports it.
    return !found_overflow;
  }
  if (found_overflow) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
    ++skipped_;
    ++consecutive_skips_;
    return false;
  }
  consecutive_skips_ = 0;
  if (++growth_tracker_ == options_.growth_interval) {
    const double grown = scale_ * options_.growth_factor;
    if (std::isfinite(grown)) scale_ = grown;  // as torch: never grow to Inf
    growth_tracker_ = 0;
  }
  return true;
}

Json LossScaler::save_state() const {
  return {{"scale", scale_}, {"growth_tracker", growth_tracker_}, {"skipped", skipped_},
          {"consecutive_skips", consecutive_skips_}};
}

void LossScaler::load_state(const Json& state) {
  for (const char* key : {"scale", "growth_tracker", "skipped", "consecutive_skips"}) {
    if (!state.contains(key) || !state[key].is_number()) {
      throw BadInput(std::string("loss scaler state: missing or non-numeric \"") + key + "\"");
    }
  }
  const double s = state["scale"].get<double>();
  if (!(s > 0.0) || !std::isfinite(s)) throw BadInput("loss scaler state: scale must be finite and > 0");
  scale_ = s;
  growth_tracker_ = state["growth_tracker"].get<int64_t>();
  skipped_ = state["skipped"].get<int64_t>();
  consecutive_skips_ = state["consecutive_skips"].get<int64_t>();
}

}  // namespace dtbench::gpu
