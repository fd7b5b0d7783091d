#include "workloads/train/mllog.hpp"

#include <chrono>
#include <filesystem>

#include "core/error.hpp"

namespace dtbench::mllog {

Logger::Logger(const std::string& path, bool echo) : echo_(echo) {
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) throw RunFailed(path + ": cannot open the MLLOG file");
}

Logger::~Logger() {
  if (file_) std::fclose(file_);
}

void Logger::event(const char* event_type, const char* key, const Json& value, Json metadata,
                   std::source_location where) {
  if (!file_ && !echo_) return;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::system_clock::now().time_since_epoch()).count();
  metadata["file"] = std::filesystem::path(where.file_name()).filename().string();
  metadata["lineno"] = where.line();
  Json e = {{"namespace", ""}, {"time_ms", ms}, {"event_type", event_type}, {"key", key}, {"value", value},
            {"metadata", metadata}};
  std::string line = ":::MLLOG " + e.dump() + "\n";
  if (file_) {
    std::fputs(line.c_str(), file_);
    std::fflush(file_);
  }
  if (echo_) std::fputs(line.c_str(), stdout);
}

}  // namespace dtbench::mllog
