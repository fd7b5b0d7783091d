// Claim f: with a global batch of 1024, 16 nodes x 64 hide communication in computation and 1024 nodes x 1 do not
// (the seeds' quiz). Terms (reducers/batch_split.hpp): per-node batch b, N = 1024 / b nodes; a step's allreduce
// T(N, S) of S gradient bytes from the reducer's cost formula with the network's latency alpha and bandwidth
// 1/beta is hidden when it fits in the backward pass, T <= backward_share x b x t_img, with t_img the device's
// time per image. The crossover is the smallest b that hides it. Inputs: the published network profiles and
// device throughput copied into the claim's folder (results/published/networks.json, compute.json), and the
// profile fitted on this machine from `dtbench allreduce` sweeps (shared memory, reported beside: it is not a
// network). Supported: on every listed network b = `hidden` hides and b = `exposed` does not. Contradicted: some
// network disagrees. Inconclusive: an input is missing.
#include <algorithm>

#include "core/error.hpp"
#include "core/published_dir.hpp"
#include "reducers/batch_split.hpp"
#include "reducers/cost_model.hpp"
#include "reducers/profiles.hpp"
#include "reproduce/criteria/kinds.hpp"
#include "reproduce/evidence.hpp"
#include "reproduce/experiments.hpp"

namespace dtbench::reproduce {
namespace comm_hiding_criterion {

void check(const Json& c, const std::string& where) {
  check_keys(c, where, {"global_batch", "model", "device", "reducer", "networks", "hidden", "exposed", "inputs",
                        "fitted"});
  integer_in(c, where, "global_batch", 2, 1 << 20);
  integer_in(c, where, "hidden", 1, 1 << 20);
  integer_in(c, where, "exposed", 1, 1 << 20);
  for (const char* k : {"model", "device", "reducer", "inputs", "fitted"}) text_in(c, where, k);
  texts_in(c, where, "networks");  // network profile names
}

const Experiment* find(const std::vector<Experiment>& es, const std::string& name) {
  for (const auto& e : es)
    if (e.name == name) return &e;
  return nullptr;
}

// Before any run: the experiments it names exist, and the published files the inputs experiment copies (read from
// results/published, as the copy will be) hold its device, model and networks; the batches split and the reducer
// has a cost formula. Each was found wrong only in the report, after the runs.
void check_experiments(const Json& c, const std::vector<Experiment>& experiments, const std::string& where) {
  published_inputs(c, experiments, where, {"compute.json", "networks.json"});
  named_experiment(c, experiments, where, "fitted", "allreduce");
  const int64_t batch = c["global_batch"].get<int64_t>();
  if ((batch & (batch - 1)) != 0) throw BadInput(where + "/global_batch: a power of two, got " + std::to_string(batch));
  for (const char* key : {"hidden", "exposed"}) {
    const int64_t b = c[key].get<int64_t>();
    if ((b & (b - 1)) != 0 || b > batch)
      throw BadInput(where + "/" + key + ": a per-node batch is a power of two up to /global_batch (" +
                     std::to_string(batch) + "), got " + std::to_string(b));
  }
  const std::filesystem::path dir = published_dir();
  const Profiles profiles = load_profiles(dir);
  BatchSplitInput in;
  in.global_batch = static_cast<int>(batch);
  try {
    in.seconds_per_image = 1.0 / profiles.device(c["device"].get<std::string>()).images_per_s;
  } catch (const BadInput& e) {
    throw BadInput(where + "/device: " + e.what());
  }
  const auto model = profiles.model_parameters.find(c["model"].get<std::string>());
  if (model == profiles.model_parameters.end())
    throw BadInput(where + "/model: no model \"" + c["model"].get<std::string>() + "\" with a parameter count in " +
                   (dir / "compute.json").string());
  in.gradient_bytes = model->second * 4;
  in.reducer = c["reducer"].get<std::string>();
  in.options = BatchSplitInput::unsegmented_options();
  for (size_t i = 0; i < c["networks"].size(); ++i) {
    try {
      in.link = profiles.network(c["networks"][i].get<std::string>()).params(profiles.gamma_s_per_byte);
    } catch (const BadInput& e) {
      throw BadInput(where + "/networks/" + std::to_string(i) + ": " + e.what());
    }
    try {
      batch_split(in);
    } catch (const BadInput& e) {
      throw BadInput(where + "/reducer: " + e.what());
    }
  }
}

Finding evaluate(const Claim&, const Json& c, const std::vector<Experiment>& experiments,
                 const std::filesystem::path& out) {
  Finding f;
  const auto* inputs = find(experiments, c["inputs"].get<std::string>());
  if (!inputs || !std::filesystem::exists(out / inputs->name / "networks.json")) {
    f.reason = "the published inputs were not copied (experiment \"" + c["inputs"].get<std::string>() + "\" not run)";
    return f;
  }
  const std::filesystem::path in_dir = out / inputs->name;
  const Profiles profiles = load_profiles(in_dir);
  const DeviceThroughput& device = profiles.device(c["device"]);  // BadInput naming compute.json when it lacks it
  BatchSplitInput in;
  in.global_batch = c["global_batch"].get<int>();
  const auto model = profiles.model_parameters.find(c["model"].get<std::string>());
  if (model == profiles.model_parameters.end())
    throw BadInput((in_dir / "compute.json").string() + ": no model \"" + c["model"].get<std::string>() +
                   "\" with a parameter count (the claim's /model)");
  in.gradient_bytes = model->second * 4;
  in.seconds_per_image = 1.0 / device.images_per_s;
  in.reducer = c["reducer"].get<std::string>();
  const int hidden = c["hidden"].get<int>(), exposed = c["exposed"].get<int>();
  std::vector<std::vector<std::string>> rows;
  Json series = Json::array();
  std::vector<std::string> wrong;
  auto add = [&](const std::string& label, const BatchSplit& split, bool judged) {
    const auto& h = split.row(hidden);
    const auto& x = split.row(exposed);
    rows.push_back({label, std::to_string(split.crossover_per_node),
                    fixed(h.comm_s * 1e3, 1) + " / " + fixed(h.window_s * 1e3, 1) + (h.hidden ? ": hidden" : ": not hidden"),
                    fixed(x.comm_s * 1e3, 1) + " / " + fixed(x.window_s * 1e3, 2) + (x.hidden ? ": hidden" : ": not hidden"),
                    judged ? "yes" : "beside"});
    if (judged && (!h.hidden || x.hidden)) wrong.push_back(label);
    Json s = {{"label", label}, {"per_node_batch", Json::array()}, {"comm_seconds", Json::array()},
              {"crossover", split.crossover_per_node}};
    for (const auto& r : split.rows) s["per_node_batch"].push_back(r.per_node), s["comm_seconds"].push_back(r.comm_s);
    series.push_back(s);
    return split;
  };
  BatchSplit last;
  for (const auto& name : c["networks"]) {
    const NetworkProfile& net = profiles.network(name.get<std::string>());
    in.link = net.params(profiles.gamma_s_per_byte);
    in.options = BatchSplitInput::unsegmented_options();
    last = add(net.label, batch_split(in), true);
  }
  // This machine's shared memory, fitted from the allreduce sweeps (beside the verdict).
  std::string fitted_note;
  const auto* fitted = find(experiments, c["fitted"].get<std::string>());
  if (fitted && fitted->kind == "allreduce") {
    std::vector<Json> sweeps;
    std::vector<std::string> absent;  // rank counts whose sweep is not there: the fit is of fewer (said, not silent)
    for (int k : fitted->ranks)
      if (std::filesystem::exists(allreduce_file(out, *fitted, k)))
        sweeps.push_back(read_allreduce_file(allreduce_file(out, *fitted, k), k));
      else
        absent.push_back(std::to_string(k));
    if (!sweeps.empty() && !absent.empty())
      fitted_note = " The fitted profile is of part of its sweeps: K = " + join(absent, ", ") + " of experiment \"" +
                    fitted->name + "\" not run.";
    if (!sweeps.empty()) {
      FittedModel m;
      try {
        m = fit_cost_model(sweeps);  // its messages count the files ("fit file 2"): say which folder
      } catch (const BadInput& e) {
        throw BadInput((out / fitted->name).string() + ": " + e.what());
      }
      auto it = m.params.find(in.reducer);
      if (it != m.params.end()) {
        in.link = it->second;
        in.options = m.options;
        in.eager_bytes = m.eager_bytes;
        add("this machine (shared memory, fitted)", batch_split(in), false);
      }
    } else {
      fitted_note = " The fitted profile is missing (experiment \"" + fitted->name + "\" not run).";
    }
  }
  Json window = Json::array();
  for (const auto& r : last.rows) window.push_back(r.window_s);
  f.figure = {{"kind", "crossover"}, {"global_batch", in.global_batch}, {"series", series},
              {"compute_seconds", window}, {"compute_label", "backward window (share x b x t_image)"}};
  f.numbers = "Inputs: " + c["model"].get<std::string>() + " gradients " + fixed(in.gradient_bytes / 1e6, 1) +
              " MB (fp32), " + device.label + " at " + fixed(device.images_per_s, 1) + " images/s (" + device.basis +
              "), backward share " + fixed(in.backward_share, 3) + ", reducer " + in.reducer +
              ". Times in ms: allreduce / backward window.\n\n" +
              md_table({"network", "crossover per-node batch",
                        std::to_string(in.global_batch / hidden) + " x " + std::to_string(hidden),
                        std::to_string(in.global_batch / exposed) + " x " + std::to_string(exposed), "judged"},
                       rows);
  if (wrong.empty()) {
    f.verdict = Verdict::supported;
    f.reason = "on every listed network " + std::to_string(in.global_batch / hidden) + " x " + std::to_string(hidden) +
               " hides the allreduce in backward and " + std::to_string(in.global_batch / exposed) + " x " +
               std::to_string(exposed) + " does not." + fitted_note;
  } else {
    f.verdict = Verdict::contradicted;
    f.reason = "the seeds' answer fails on: " + join(wrong, ", ") + "." + fitted_note;
  }
  return f;
}

}  // namespace comm_hiding_criterion

const CriterionKind kCommHiding = {"comm_hiding", comm_hiding_criterion::check, comm_hiding_criterion::evaluate,
                                   comm_hiding_criterion::check_experiments};

}  // namespace dtbench::reproduce
