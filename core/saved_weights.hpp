// The weights file a run wrote as it ended (/output/save_weights: `<name>.weights` beside its record, the
// parameters then the buffers as floats), read back as its record describes it (/extra/weights).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/run_record.hpp"

namespace dtbench {

// Whether the record says the run saved its weights (it has /extra/weights).
bool saved_weights(const RunRecord& r);

// The floats of the run's weights file, whole, or none with `problem` saying why: the record has no /extra/weights
// or names another file than the run's own, the file is missing or of another size, or its CRC-32 is not the
// record's (/extra/weights/crc32, where the record keeps one: records from before it do not).
std::vector<float> read_saved_weights(const RunRecord& r, const std::filesystem::path& record_path, std::string& problem);

}  // namespace dtbench
