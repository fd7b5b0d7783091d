#include "workloads/train/run_paths.hpp"

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace dtbench {
namespace fs = std::filesystem;

std::string derived_run_name(const Json& c, int ranks, long global_batch) {
  const int64_t m = c["parallel"]["model_parallel"].get<int64_t>();  // model-parallel runs are named apart
  const int64_t stages = c["parallel"]["pipeline_stages"].get<int64_t>();
  // A pipeline's schedule and micro-batches are its axes: "-pp4-1f1b-m8".
  const std::string pipeline = stages > 1 ? "-pp" + std::to_string(stages) + "-" +
                                                c["parallel"]["pipeline_schedule"].get<std::string>() + "-m" +
                                                std::to_string(c["batch"]["micro_batches"].get<int64_t>())
                                          : std::string();
  return c["model"]["arch"].get<std::string>() + "-" + c["optimizer"]["name"].get<std::string>() + "-" +
         c["reducer"]["name"].get<std::string>() + "-k" + std::to_string(ranks) +
         (m > 1 ? "-mp" + std::to_string(m) : std::string()) + pipeline + "-b" + std::to_string(global_batch) + "-s" +
         std::to_string(c["seed"].get<int64_t>());
}

RunPaths run_paths(const Json& cfg) {
  const Json& out = cfg["output"];
  std::string file = out["record"].get<std::string>();
  if (file.empty()) file = cfg["name"].get<std::string>() + ".json";
  // (config/rules.cpp refused a '/', "." and ".." in the name or record, and names too long for the file system.)
  RunPaths p;
  p.record = fs::path(out["dir"].get<std::string>()) / file;
  const std::string r = p.record.string();
  const std::string stem = r.substr(0, r.size() - (p.record.extension() == ".json" ? 5 : 0));
  p.checkpoint = stem + ".ckpt";
  p.mllog = stem + ".mllog";
  if (out["save_weights"].get<bool>()) p.weights = stem + ".weights";
  return p;
}

void check_outputs(const RunPaths& paths, bool resuming, const std::string& save_weights, const std::string& trace) {
  if (!save_weights.empty()) check_output_file(save_weights, "--save-weights");
  if (!trace.empty()) check_output_file(trace, "--trace");
  std::error_code ec;
  if (!paths.weights.empty() && fs::exists(paths.weights, ec))
    throw BadInput("/output/save_weights: " + paths.weights.string() +
                   " exists already; weights files are never overwritten (choose another /output/record or "
                   "/name, or move the old files)");
  // Last: it creates the folder (/output/dir, or a folder the record's name holds).
  const fs::path folder = paths.record.has_parent_path() ? paths.record.parent_path() : fs::path(".");
  fs::create_directories(folder, ec);
  if (ec) throw BadInput("/output/dir: " + folder.string() + ": cannot create output folder: " + ec.message());
  check_writable(paths.record, !resuming);
}

}  // namespace dtbench
