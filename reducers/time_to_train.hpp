// Time to train a published run predicted from published figures (issue 13, claim i): per-device
// throughput, the cluster's two networks, the model's gradient bytes and the reducers the paper used.
//
//   steps     = ceil(epochs x dataset images / batch)
//   compute   = (batch / devices) / images_per_s            one device's forward + backward per step
//   comm      = T_intra(devices per server, S) + T_inter(servers, S)
//   exposed   = max(0, comm - backward_share x compute)    what backward does not cover (batch_split.hpp)
//   predicted = steps x (compute + exposed)
//
// comm is a hierarchical allreduce, as Goyal et al. 2017 (section 4) describe theirs: a reduce inside
// each server, an allreduce between servers, a broadcast inside each server. A pipelined ring reduce
// followed by a ring broadcast moves what a ring allreduce moves, so the two intra-server phases are
// the intra reducer's allreduce on devices_per_server ranks over the intra link; the inter-server phase
// is the inter reducer's allreduce on `servers` ranks over the network. Each term is that reducer's
// cost formula (reducers/cost_terms.hpp) with the network profile's alpha and beta and the devices'
// gamma. Not modelled: data loading, the optimizer step, stragglers, evaluation.
#pragma once

#include <string>

#include "core/json.hpp"
#include "reducers/profiles.hpp"

namespace dtbench {

struct TimeToTrain {
  double steps = 0, per_device_batch = 0;
  double compute_s = 0, comm_intra_s = 0, comm_inter_s = 0, exposed_s = 0, step_s = 0;
  double predicted_s = 0, published_s = 0;
  double rel_error = 0;  // (predicted - published) / published
  Json inputs;           // every input with its value, basis and sources, for a report
  Json to_json() const;
};

// The prediction for published run `run_name` (compute.json /runs). BadInput when the batch does not
// divide over the cluster's devices.
TimeToTrain predict_time_to_train(const Profiles& profiles, const std::string& run_name,
                                  double backward_share = 2.0 / 3.0);

}  // namespace dtbench
