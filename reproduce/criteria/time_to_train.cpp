// Claim i: the cost model predicts published times to train from published figures: Goyal et al. 2017's hour on
// 256 P100 GPUs and another row of the seeds' table. The prediction (reducers/time_to_train.hpp): steps x (one
// device's compute per step + the part of the hierarchical allreduce, intra-server then inter-server, that backward
// does not cover), with every input taken from results/published (copied into the claim's folder when it ran) and
// named with its source in the report. Supported: every listed run is predicted within `max_error` (relative) of
// its published time. Contradicted: some run is not. The same prediction with each alternative device throughput in
// `sensitivity` is reported beside (how much the verdict rests on the throughput figure).
#include <cmath>

#include "core/published_dir.hpp"
#include "reducers/profiles.hpp"
#include "reducers/time_to_train.hpp"
#include "reproduce/criteria/kinds.hpp"
#include "reproduce/evidence.hpp"

namespace dtbench::reproduce {
namespace time_to_train_criterion {

void check(const Json& c, const std::string& where) {
  check_keys(c, where, {"runs", "max_error", "inputs", "sensitivity"});
  number_in(c, where, "max_error", 0, 10);
  text_in(c, where, "inputs");  // an experiment name
  texts_in(c, where, "runs");    // published runs of compute.json
  if (!(c["sensitivity"].is_array() && c["sensitivity"].empty())) texts_in(c, where, "sensitivity");  // devices
}

// The runs and the alternative devices are rows of the published files the inputs experiment copies (read from
// results/published, as the copy will be).
void check_experiments(const Json& c, const std::vector<Experiment>& experiments, const std::string& where) {
  published_inputs(c, experiments, where, {"compute.json", "networks.json"});
  const Profiles profiles = load_profiles(published_dir());
  for (const char* key : {"runs", "sensitivity"})
    for (size_t i = 0; i < c[key].size(); ++i) try {
        if (std::string(key) == "runs")
          profiles.run(c[key][i].get<std::string>());
        else
          profiles.device(c[key][i].get<std::string>());
      } catch (const BadInput& e) {
        throw BadInput(where + "/" + key + "/" + std::to_string(i) + ": " + e.what());
      }
}

std::string minutes(double s) { return fixed(s / 60, 1); }

Finding evaluate(const Claim&, const Json& c, const std::vector<Experiment>&, const std::filesystem::path& out) {
  Finding f;
  const auto dir = out / c["inputs"].get<std::string>();
  if (!std::filesystem::exists(dir / "compute.json")) {
    f.reason = "the published inputs were not copied (experiment \"" + c["inputs"].get<std::string>() + "\" not run)";
    return f;
  }
  const Profiles profiles = load_profiles(dir);
  const double max_error = c["max_error"].get<double>();
  std::vector<std::vector<std::string>> rows, sens;
  std::string inputs, failed;
  for (const auto& name : c["runs"]) {
    const PublishedRun& run = profiles.run(name);
    const TimeToTrain t = predict_time_to_train(profiles, run.name);
    const bool ok = within(t.rel_error, max_error);
    if (!ok) failed += (failed.empty() ? "" : ", ") + run.work;
    rows.push_back({run.work, std::to_string(run.batch), fixed(t.steps, 0), fixed(t.compute_s, 4),
                    fixed(t.comm_intra_s * 1e3, 1) + " + " + fixed(t.comm_inter_s * 1e3, 1), fixed(t.exposed_s * 1e3, 1),
                    minutes(t.predicted_s), minutes(t.published_s), fixed(100 * t.rel_error, 1) + "%",
                    ok ? "yes" : "**no**"});
    inputs += "\n- " + run.work + ": device " + profiles.device(run.device).label + ", " +
              fixed(profiles.device(run.device).images_per_s, 1) + " images/s (" + profiles.device(run.device).basis +
              "); cluster " + profiles.cluster(run.cluster).label + "; reducers " + run.intra_reducer + " inside a "
              "server, " + run.inter_reducer + " between servers; " + std::to_string(run.bytes_per_parameter) +
              " bytes per gradient value." + (run.note.empty() ? "" : " " + run.note);
    for (const auto& alt : c["sensitivity"]) {
      Profiles p = profiles;
      for (auto& r : p.runs)
        if (r.name == run.name) r.device = alt.get<std::string>();
      const TimeToTrain s = predict_time_to_train(p, run.name);
      sens.push_back({run.work, p.device(alt).label, minutes(s.predicted_s), fixed(100 * s.rel_error, 1) + "%"});
    }
  }
  f.numbers = md_table({"run", "batch", "steps", "compute/step (s)", "allreduce intra + inter (ms)",
                        "exposed (ms)", "predicted (min)", "published (min)", "error", "within " +
                        fixed(100 * max_error, 0) + "%"}, rows, {9}) +
              "\nInputs and their sources (results/published/compute.json and networks.json):" + inputs + "\n";
  if (!sens.empty())
    f.numbers += "\nSensitivity: the same predictions with another published device throughput.\n\n" +
                 md_table({"run", "device throughput", "predicted (min)", "error"}, sens);
  f.verdict = failed.empty() ? Verdict::supported : Verdict::contradicted;
  f.reason = failed.empty() ? "every listed run is predicted within " + fixed(100 * max_error, 0) +
                                  "% of its published time."
                            : "outside " + fixed(100 * max_error, 0) + "%: " + failed + ".";
  return f;
}

}  // namespace time_to_train_criterion

const CriterionKind kTimeToTrain = {"time_to_train", time_to_train_criterion::check, time_to_train_criterion::evaluate,
                                    time_to_train_criterion::check_experiments};

}  // namespace dtbench::reproduce
