// Published network and compute profiles for the cost model (results/published/networks.json and
// compute.json): what a network's alpha and beta are, how fast a device trains, which published
// training runs to predict. Each figure keeps its source and basis (nominal, measured, typical,
// assumed, derived) so a report can state them. One reader for both files: every field is checked
// (type, range, cross references, no unknown keys) and an error is BadInput "<file>: <JSON pointer>: ..."
// (exit 2).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "reducers/cost_model.hpp"

namespace dtbench {

struct NetworkProfile {
  std::string name, label;
  double alpha_s = 0;                // seconds per message
  double bandwidth_bytes_per_s = 0;  // per direction per link
  std::string alpha_basis, bandwidth_basis;
  Json sources;                      // [{title, url, where}]
  // The cost model's parameters: one alpha for every message size (alpha_rndv = alpha), beta =
  // 1 / bandwidth, and the reduction cost `gamma` (seconds per byte) given by the caller.
  CostParams params(double gamma) const;
};

struct Cluster {
  std::string name, label;
  int servers = 0, devices_per_server = 0;
  std::string intra, inter;  // network profile names
  Json sources;
};

struct DeviceThroughput {
  std::string name, label, basis;
  double images_per_s = 0;
  int batch_per_device = 0;
  Json sources;
};

// A published training run to predict (claim i): names resolve in the other lists.
struct PublishedRun {
  std::string name, work, cluster, device, model, dataset, intra_reducer, inter_reducer;
  int bytes_per_parameter = 4, batch = 0;
  double epochs = 0, published_minutes = 0;
  std::string note;
};

struct Profiles {
  std::vector<NetworkProfile> networks;
  double gamma_s_per_byte = 0;  // networks.json /gamma: the reduction cost on the devices
  Json gamma_sources;
  std::vector<Cluster> clusters;
  std::vector<DeviceThroughput> devices;
  std::map<std::string, double> model_parameters;  // model name -> parameter count
  std::map<std::string, double> dataset_images;    // dataset name -> training images
  std::vector<PublishedRun> runs;
  std::string networks_file, compute_file;  // where they were read (parse_profiles' names), for messages

  // By name; BadInput naming the file that lacks it and listing the names there are.
  const NetworkProfile& network(const std::string& name) const;
  const Cluster& cluster(const std::string& name) const;
  const DeviceThroughput& device(const std::string& name) const;
  const PublishedRun& run(const std::string& name) const;
};

// Reads and validates `dir`/networks.json and `dir`/compute.json (default: results/published).
Profiles load_profiles(const std::filesystem::path& dir);
// The same from documents already parsed; `networks_file` and `compute_file` name them in errors.
Profiles parse_profiles(const Json& networks, const std::string& networks_file, const Json& compute,
                        const std::string& compute_file);

}  // namespace dtbench
