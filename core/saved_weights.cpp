#include "core/saved_weights.hpp"

#include <cstdint>
#include <fstream>

#include "core/config.hpp"
#include "core/crc32.hpp"

namespace fs = std::filesystem;

namespace dtbench {

bool saved_weights(const RunRecord& r) { return r.extra.is_object() && r.extra.contains("weights"); }

std::vector<float> read_saved_weights(const RunRecord& r, const fs::path& record_path, std::string& problem) {
  problem.clear();
  const Json& w = saved_weights(r) ? r.extra["weights"] : Json();
  if (!w.is_object() || !w.contains("file") || !w["file"].is_string() || !w.contains("floats") ||
      !w["floats"].is_number_unsigned() || !w.contains("parameters") || !w["parameters"].is_number_unsigned()) {
    problem = r.name + ": the record has no /extra/weights (run with output.save_weights: true)";
    return {};
  }
  const auto floats = w["floats"].get<uint64_t>(), params = w["parameters"].get<uint64_t>();
  // A run's weights are its own: a record naming another file (the reference run's, or one up a `..`) compared that
  // file, and claim a said supported (found by a hunt).
  const fs::path file = beside_record(record_path, ".weights");
  if (w["file"].get<std::string>() != file.filename().string()) {
    // Shown capped, as every echoed value is (its first version echoed a file name of any length whole).
    problem = record_path.string() + ": /extra/weights/file names " + config::shown(w["file"]) +
              ", not the run's own " + file.filename().string() + " beside the record";
    return {};
  }
  std::error_code ec;
  // The size in floats, not the floats in bytes: a count near 2^64 would wrap its product to a size that matches.
  const std::uintmax_t size = fs::is_regular_file(file, ec) ? fs::file_size(file, ec) : 0;
  if (ec || size == 0 || size % sizeof(float) != 0 || size / sizeof(float) != floats || params > floats) {
    problem = file.string() + ": missing, not a regular file, or not " + std::to_string(floats) + " floats";
    return {};
  }
  // Read once, whole (the CRC covers the buffers after the parameters).
  std::vector<float> v(floats);
  std::ifstream in(file, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(size))) {
    problem = file.string() + ": cannot read";
    return {};
  }
  // The file the run wrote: another run's file of the same shape copied over it was compared, and claim a flipped
  // (found by a hunt).
  if (w.contains("crc32")) {
    const std::string crc = crc32_hex(crc32_of(reinterpret_cast<const char*>(v.data()), static_cast<size_t>(size)));
    if (!w["crc32"].is_string() || w["crc32"].get<std::string>() != crc) {
      problem = file.string() + ": its CRC-32 is " + crc + ", the record's /extra/weights/crc32 " +
                config::shown(w["crc32"]) + ": not the file this run wrote";
      return {};
    }
  }
  return v;
}

}  // namespace dtbench
