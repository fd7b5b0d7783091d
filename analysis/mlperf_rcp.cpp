#include "analysis/mlperf_rcp.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/mlperf.hpp"

namespace dtbench::analysis {
namespace {

constexpr size_t kMinRuns = 3;  // the olympic mean drops the fastest and the slowest

// The config fields the export reads, checked before it reads any: a record's config is what its file holds (the
// record's reader checks only that it is an object), and a missing key read through a const operator[] is undefined
// behaviour (an edited record gave a file with `"opt_name": ,` and exit 0). BadInput naming the record and pointer.
void check_config_fields(const RunData& run) {
  try {
    const JsonFields config(run.record->config, "/config");
    const JsonFields optimizer = config.fields("optimizer");
    optimizer.string("name");
    optimizer.number("lr");
    for (const char* key : {"momentum", "weight_decay"})
      if (optimizer.has(key)) optimizer.number(key);
    config.fields("lr_scaling").string("rule");
    const JsonFields schedule = config.fields("schedule");
    schedule.string("name");
    const JsonFields warmup = schedule.fields("warmup");
    warmup.number("epochs");
    warmup.integer("steps");
    if (config.has("eval") && config.fields("eval").has("test_samples")) config.fields("eval").integer("test_samples");
    config.fields("model").string("arch");
    if (config.has("backend")) config.string("backend");
    if (config.has("mllog")) {
      const JsonFields mllog = config.fields("mllog");
      for (const char* key : {"submission_benchmark", "submission_platform", "submission_org"})
        if (mllog.has(key)) mllog.string(key);
    }
  } catch (const BadInput& e) {
    throw BadInput(run.record_path.string() + ": " + e.what());
  }
}

// The hyperparameters MLPerf's RCP files list, from the run's record (MLPerf's key names). The base learning rate
// is the one the run's MLLOG file logs, the schedule's base rate (extra.peak_lr: the config's lr scaled to the
// global batch by /lr_scaling; the peak of every schedule but inverse_sqrt with /schedule/beta < 1, which starts
// above it at lr / sqrt(beta)); a record written before it was kept has it only where no rule scales the lr.
Json hyperparams(const RunRecord& r) {
  const Json& cfg = r.config;
  const Json& opt = cfg["optimizer"];
  // The warmup in epochs as the run's MLLOG file logs it: the steps the schedule warmed up for (extra.warmup_steps)
  // over the steps per epoch. A record written before extra.warmup_steps was kept: its configured warmup in steps,
  // by the schedule's own rule (warmup_steps_of_epochs); without its steps per epoch, the configured epochs.
  // The steps and the epochs name the same warmup (a warmup given in epochs has /schedule/warmup/steps 0: the
  // steps column said 0 beside 4/7 epochs).
  const Json& warm = cfg["schedule"]["warmup"];
  Json warm_epochs = warm["epochs"], warm_steps = warm["steps"];
  const double epochs = warm["epochs"].get<double>();
  int64_t spe = 0;
  if (r.extra.contains("steps_per_epoch") && r.extra["steps_per_epoch"].is_number_integer())
    spe = std::max<int64_t>(0, r.extra["steps_per_epoch"].get<int64_t>());
  std::optional<int64_t> steps;
  if (r.extra.contains("warmup_steps") && r.extra["warmup_steps"].is_number_integer())
    steps = r.extra["warmup_steps"].get<int64_t>();
  else if (warm["steps"].get<int64_t>() > 0 || epochs == 0)
    steps = warm["steps"].get<int64_t>();
  else if (spe > 0 && epochs > 0 && epochs * double(spe) <= 0x1p62)  // a damaged record's 1e300 epochs stay
    steps = warmup_steps_of_epochs(epochs, spe);
  if (steps) {
    warm_steps = *steps;
    if (spe > 0) warm_epochs = static_cast<double>(*steps) / double(spe);
  }
  Json h = {{"opt_name", opt["name"]},
            {"lr_scaling", cfg["lr_scaling"]["rule"]},
            {"opt_learning_rate_warmup_epochs", warm_epochs},
            {"opt_learning_rate_warmup_steps", warm_steps},
            {"schedule", cfg["schedule"]["name"]}};
  if (r.extra.contains("peak_lr")) h["opt_base_learning_rate"] = r.extra["peak_lr"];
  else if (cfg["lr_scaling"]["rule"] == "none") h["opt_base_learning_rate"] = opt["lr"];
  if (opt.contains("momentum")) h["opt_momentum"] = opt["momentum"];
  if (opt.contains("weight_decay")) h["opt_weight_decay"] = opt["weight_decay"];
  return h;
}


}  // namespace

RcpSet reference_convergence_points(const CampaignData& c) {
  RcpSet out;
  std::string benchmark;
  std::map<int64_t, std::string> batch_point;  // BS -> the point that gave it
  // One RCP file is the epochs to one target of one model on one data set: MLPerf's checker interpolates between
  // its batch sizes as along one curve (a zip of batch and target wrote epochs to 0.6 at 256 beside epochs to 0.74 at
  // 512, exit 0; found by a hunt). The first counted run's values, and its point.
  static const char* const kAgreed[] = {"/eval/target_accuracy", "/model/arch", "/data/dataset"};
  // The errors name the records' files: a point's id ("p3") is the campaign's, and a folder of records has made-up ones.
  std::vector<std::string> agreed;
  std::string agreed_run, benchmark_run;
  bool any_target = false;
  for (const PointData& p : c.points) {
    std::vector<double> epochs;
    const RunRecord* first = nullptr;
    size_t done = 0, subset = 0;
    int64_t bs = 0;
    for (const RunData& run : p.runs) {
      if (!run.record || run.state != "done") continue;
      const RunRecord& r = *run.record;
      check_config_fields(run);
      ++done;
      if (r.target_accuracy <= 0) continue;
      any_target = true;
      // An accuracy on part of the test set (/eval/test_samples) is not the target MLPerf's RCPs are epochs to: the
      // point is left out saying so (such a campaign was refused as having no target, exit 2). N at least the whole
      // set (extra.test_set_samples; a record without it counts as part) is the whole set (it was left out; a hunt).
      const auto eval = r.config.find("eval");
      const int64_t kept = eval != r.config.end() ? eval->value("test_samples", int64_t{0}) : 0;
      const auto whole = r.extra.find("test_set_samples");
      if (kept > 0 && !(whole != r.extra.end() && whole->is_number_integer() && kept >= whole->get<int64_t>())) {
        ++subset;
        continue;
      }
      const std::string here = run.record_path.string() + " (point " + p.id + ")";
      const std::string b = mlperf_benchmark(r.config);
      if (!benchmark.empty() && b != benchmark)
        throw BadInput(here + ": benchmark \"" + b + "\", but " + benchmark_run + "'s is \"" + benchmark +
                       "\" (one RCP file holds one benchmark)");
      if (benchmark.empty()) benchmark_run = here;
      benchmark = b;
      std::vector<std::string> values;
      for (const char* key : kAgreed) {
        const Json::json_pointer at(key);
        values.push_back(r.config.contains(at) ? r.config[at].dump() : "none");
      }
      if (agreed.empty()) agreed = values, agreed_run = here;
      for (size_t i = 0; i < values.size(); ++i)
        if (values[i] != agreed[i])
          throw BadInput(here + ": " + kAgreed[i] + " " + values[i] + ", but " + agreed_run + "'s is " + agreed[i] +
                         " (one RCP file holds the epochs to one target of one model on one data set)");
      bs = r.global_batch;
      if (!first) first = &r;
      // A run that reached the target and diverged after is not a converged reference.
      if (r.time_to_accuracy && r.status != RunStatus::diverged) epochs.push_back(r.time_to_accuracy->epoch);
    }
    const std::string partial = subset == 0 ? "" : " (" + std::to_string(subset) + " evaluated part of the test set, /eval/test_samples: not counted)";
    if (!first) {
      out.skipped.push_back(p.id + ": no finished run with a target accuracy" + partial);
      continue;
    }
    if (epochs.size() < kMinRuns) {
      out.skipped.push_back(p.id + ": " + std::to_string(epochs.size()) + " of " + std::to_string(done) +
                            " finished runs reached the target; an RCP needs at least " + std::to_string(kMinRuns) +
                            partial);
      continue;
    }
    auto [it, fresh] = batch_point.emplace(bs, p.id);
    if (!fresh)
      throw BadInput(p.id + " and " + it->second + " both have global batch " + std::to_string(bs) +
                     ": one RCP per batch size (give a campaign whose points differ in the batch)");
    std::sort(epochs.begin(), epochs.end());
    if (epochs.size() < done)
      out.fewer_runs.push_back(p.id + ": " + std::to_string(epochs.size()) + " of " + std::to_string(done) +
                            " finished runs reached the target; the others have no epochs to converge and are not "
                            "in its RCP" + partial);
    out.rcps[benchmark + "_ref_" + std::to_string(bs)] = {
        {"Benchmark", benchmark},
        {"Creator", first->config.contains("mllog") ? first->config["mllog"].value("submission_org", "dtbench")
                                                    : std::string("dtbench")},
        {"When", first->finished_utc},
        {"Platform", mlperf_platform(first->config, first->ranks, first->provenance)},
        {"BS", bs},
        {"Hyperparams", hyperparams(*first)},
        {"Epochs to converge", epochs}};
  }
  if (!any_target)
    throw BadInput(c.name + ": no finished run has an eval.target_accuracy; RCPs are epochs to a target");
  return out;
}

}  // namespace dtbench::analysis
