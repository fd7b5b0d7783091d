#include "reducers/time_to_train.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "reducers/batch_split.hpp"

namespace dtbench {
namespace {

Json network_json(const NetworkProfile& n) {
  return {{"name", n.name},
          {"label", n.label},
          {"alpha_s", n.alpha_s},
          {"alpha_basis", n.alpha_basis},
          {"bandwidth_bytes_per_s", n.bandwidth_bytes_per_s},
          {"bandwidth_basis", n.bandwidth_basis},
          {"sources", n.sources}};
}

// One allreduce of `bytes` on `ranks` ranks with `reducer` over network `n` (whole messages, as a
// published algorithm sends them).
double allreduce_seconds(const std::string& reducer, int ranks, double bytes, const NetworkProfile& n, double gamma) {
  return link_seconds(cost_terms(reducer, ranks, bytes, BatchSplitInput::unsegmented_options()), n.params(gamma), bytes);
}

}  // namespace

Json TimeToTrain::to_json() const {
  return {{"steps", steps},
          {"per_device_batch", per_device_batch},
          {"compute_s", compute_s},
          {"comm_intra_s", comm_intra_s},
          {"comm_inter_s", comm_inter_s},
          {"exposed_comm_s", exposed_s},
          {"step_s", step_s},
          {"predicted_s", predicted_s},
          {"published_s", published_s},
          {"rel_error", rel_error},
          {"inputs", inputs}};
}

TimeToTrain predict_time_to_train(const Profiles& profiles, const std::string& run_name, double backward_share) {
  const PublishedRun& run = profiles.run(run_name);
  const Cluster& cluster = profiles.cluster(run.cluster);
  const DeviceThroughput& device = profiles.device(run.device);
  const NetworkProfile& intra = profiles.network(cluster.intra);
  const NetworkProfile& inter = profiles.network(cluster.inter);
  const double parameters = profiles.model_parameters.at(run.model);
  const double images = profiles.dataset_images.at(run.dataset);
  const double gamma = profiles.gamma_s_per_byte;
  const int devices = cluster.servers * cluster.devices_per_server;
  if (run.batch % devices != 0)
    throw BadInput("published run " + run.name + ": batch " + std::to_string(run.batch) + " does not divide over " +
                   std::to_string(devices) + " devices");

  TimeToTrain t;
  const double bytes = parameters * run.bytes_per_parameter;
  t.steps = std::ceil(run.epochs * images / run.batch);
  t.per_device_batch = run.batch / devices;
  t.compute_s = t.per_device_batch / device.images_per_s;
  t.comm_intra_s = allreduce_seconds(run.intra_reducer, cluster.devices_per_server, bytes, intra, gamma);
  t.comm_inter_s = allreduce_seconds(run.inter_reducer, cluster.servers, bytes, inter, gamma);
  t.exposed_s = std::max(0.0, t.comm_intra_s + t.comm_inter_s - backward_share * t.compute_s);
  t.step_s = t.compute_s + t.exposed_s;
  t.predicted_s = t.steps * t.step_s;
  t.published_s = run.published_minutes * 60;
  t.rel_error = (t.predicted_s - t.published_s) / t.published_s;
  t.inputs = {{"run", run.name},
              {"work", run.work},
              {"note", run.note},
              {"batch", run.batch},
              {"epochs", run.epochs},
              {"dataset_images", images},
              {"model", run.model},
              {"parameters", parameters},
              {"bytes_per_parameter", run.bytes_per_parameter},
              {"gradient_bytes", bytes},
              {"cluster", {{"name", cluster.name}, {"label", cluster.label}, {"servers", cluster.servers},
                           {"devices_per_server", cluster.devices_per_server}, {"sources", cluster.sources}}},
              {"device", {{"name", device.name}, {"label", device.label}, {"images_per_s", device.images_per_s},
                          {"basis", device.basis}, {"sources", device.sources}}},
              {"intra", network_json(intra)},
              {"intra_reducer", run.intra_reducer},
              {"inter", network_json(inter)},
              {"inter_reducer", run.inter_reducer},
              {"gamma_s_per_byte", gamma},
              {"gamma_sources", profiles.gamma_sources},
              {"backward_share", backward_share},
              {"published_minutes", run.published_minutes}};
  return t;
}

}  // namespace dtbench
