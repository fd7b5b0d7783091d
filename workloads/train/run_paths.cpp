#include "workloads/train/run_paths.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/run_record.hpp"

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
  p.checkpoint = beside_record(p.record, ".ckpt");
  p.mllog = beside_record(p.record, ".mllog");
  if (out["save_weights"].get<bool>()) p.weights = beside_record(p.record, ".weights");
  return p;
}

bool preempted_record(const fs::path& record) {
  std::error_code ec;
  // A link is not replaced (the rerun's record would take the link's place and leave its target preempted).
  if (!fs::is_regular_file(fs::symlink_status(record, ec))) return false;
  const RecordFile old = read_run_record(record);
  return old.record && old.record->status == RunStatus::preempted;
}

bool weights_left_over(const RunPaths& paths, bool resume) {
  std::error_code ec;
  if (!resume || paths.weights.empty() || !fs::exists(paths.weights, ec)) return false;
  return !fs::exists(paths.record, ec) || preempted_record(paths.record);
}

void check_output_kind(const fs::path& path, fs::file_type kind) {
  std::error_code ec;
  // Not through a link: the MLLOG file, written in place, truncated the file a link there named to the log, and a
  // link to nowhere at the checkpoint passed as "not there", then failed the run after training (found by a hunt).
  // dtbench never makes these names links; a run's own files are its own.
  const fs::file_type type = fs::symlink_status(path, ec).type();
  if (type == fs::file_type::symlink)
    throw BadInput("/output: " + path.string() + " is a symbolic link (to " + fs::read_symlink(path, ec).string() +
                   "); the run writes its own " + (kind == fs::file_type::directory ? "folder" : "file") +
                   " there: remove the link or choose another /name");
  if (type != fs::file_type::not_found && type != fs::file_type::none && type != kind)
    throw BadInput("/output: " + path.string() + " exists and is not a " +
                   (kind == fs::file_type::directory ? "folder" : "regular file") + " (the run writes it)");
}

void check_outputs(const RunPaths& paths, bool resuming, bool replace_weights, const std::string& save_weights,
                   const std::string& trace, const std::vector<std::pair<std::string, std::string>>& inputs) {
  if (!save_weights.empty()) check_output_file(save_weights, "--save-weights");
  if (!trace.empty()) check_output_file(trace, "--trace");
  std::error_code ec;
  for (const auto& [path, kind] : {std::pair{paths.mllog, fs::file_type::regular}, {paths.record, fs::file_type::regular},
                                   {paths.checkpoint, fs::file_type::directory}, {paths.weights, fs::file_type::regular}})
    if (!path.empty()) check_output_kind(path, kind);
  // The MLLOG file is the one output written in place (a resumed run appends to it): one that has other names (hard
  // links) would change them too (a config linked there was truncated to the log; found by a hunt). The others are
  // written beside and renamed, which leaves another name's file as it was.
  struct stat st {};
  if (::stat(paths.mllog.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink > 1)
    throw BadInput("/output: " + paths.mllog.string() + ", the MLLOG file the run writes in place, has " +
                   std::to_string(st.st_nlink - 1) + " other name(s) (hard links), which it would change too; remove "
                   "it or choose another /name");
  // Two outputs, or an output and an input, at one path: the later write would replace the other's file.
  std::vector<std::pair<std::string, fs::path>> named = {{"the record", paths.record}, {"the MLLOG file", paths.mllog},
                                                         {"the checkpoint folder", paths.checkpoint}};
  if (!paths.weights.empty()) named.emplace_back("/output/save_weights' file", paths.weights);
  if (!save_weights.empty()) named.emplace_back("--save-weights", save_weights);
  if (!trace.empty()) named.emplace_back("--trace", trace);
  const size_t outputs = named.size();
  for (const auto& [what, path] : inputs)
    if (!path.empty()) named.emplace_back(what, path);
  for (size_t i = 0; i < outputs; ++i)
    for (size_t k = i + 1; k < named.size(); ++k) {
      const fs::path a = resolved_path(named[i].second), b = resolved_path(named[k].second);
      // The checkpoint is a folder: nothing may be written inside it either.
      const bool inside = i == 2 && std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first == a.end();
      // Nor inside --init-from's checkpoint folder, which another run wrote (and others may start from).
      const bool into_input = k >= outputs && named[k].first == "--init-from" &&
                              std::mismatch(b.begin(), b.end(), a.begin(), a.end()).first == b.end();
      if (into_input)
        throw BadInput(named[i].first + ": " + named[i].second.string() + " is inside " + named[k].first + " (" +
                       named[k].second.string() + "); give another path");
      if (a == b || inside)
        throw BadInput(named[k].first + ": " + named[k].second.string() + " is " +
                       (inside && a != b ? "inside " : "") + named[i].first + " (" + named[i].second.string() +
                       "); give another path");
    }
  // Nor the folder the record goes in, or one above it: the file would be renamed onto a folder after training (the
  // folder does not exist yet when check_output_file looks at a fresh run's path).
  const fs::path record_folder = resolved_path(paths.record.has_parent_path() ? paths.record.parent_path() : fs::path("."));
  for (const auto& [what, path] : {std::pair<std::string, std::string>{"--save-weights", save_weights}, {"--trace", trace}}) {
    if (path.empty()) continue;
    fs::path p = resolved_path(path);
    if (!p.has_filename()) p = p.parent_path();  // "out/"
    if (std::mismatch(p.begin(), p.end(), record_folder.begin(), record_folder.end()).first == p.end())
      throw BadInput(what + ": " + path + " is the run's output folder " + record_folder.string() +
                     (p == record_folder ? "" : " or a folder above it") + " (/output/dir); give a file's path");
  }
  if (!paths.weights.empty() && fs::exists(paths.weights, ec) && !replace_weights)
    throw BadInput("/output/save_weights: " + paths.weights.string() +
                   " exists already; weights files are never overwritten (choose another /output/record or "
                   "/name, or move the old files)");
  // Last: it creates the folder (/output/dir, or a folder the record's name holds).
  const fs::path folder = paths.record.has_parent_path() ? paths.record.parent_path() : fs::path(".");
  // A name too long is found before a folder above it is made; the shape only (no probe file): check_writable
  // probes the folder itself next, and a folder above that cannot be written fails create_directories.
  check_output_folder(folder, "/output/dir", false);
  fs::create_directories(folder, ec);
  if (ec) throw BadInput("/output/dir: " + folder.string() + ": cannot create output folder: " + ec.message());
  check_writable(paths.record, !resuming);
}

}  // namespace dtbench
