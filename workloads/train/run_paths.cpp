#include "workloads/train/run_paths.hpp"

#include <optional>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "workloads/train/checkpoint.hpp"
#include "workloads/train/world.hpp"

namespace dtbench {
namespace fs = std::filesystem;

std::string derived_run_name(const Json& c, int ranks, long global_batch) {
  return c["model"]["arch"].get<std::string>() + "-" + c["optimizer"]["name"].get<std::string>() + "-" +
         c["reducer"]["name"].get<std::string>() + "-k" + std::to_string(ranks) + "-b" +
         std::to_string(global_batch) + "-s" + std::to_string(c["seed"].get<int64_t>());
}

RunPaths agree_on_run_paths(const Json& cfg, bool resume, const World& world) {
  const Json& out = cfg["output"];
  std::string file = out["record"].get<std::string>();
  if (file.empty()) file = cfg["name"].get<std::string>() + ".json";
  if (file.find('/') != std::string::npos) throw BadInput("/output/record: a file name, not a path: \"" + file + "\"");
  RunPaths p;
  p.record = fs::path(out["dir"].get<std::string>()) / file;
  const std::string r = p.record.string();
  const std::string stem = r.substr(0, r.size() - (p.record.extension() == ".json" ? 5 : 0));
  p.checkpoint = stem + ".ckpt";
  p.mllog = stem + ".mllog";
  std::optional<Error> err;
  if (world.root()) {
    try {
      const bool resuming = resume && !read_header(p.checkpoint).is_null();
      check_writable(p.record, !resuming);
    } catch (const Error& e) {
      err = e;
    }
  }
  world.agree_on_error(err);
  return p;
}

}  // namespace dtbench
