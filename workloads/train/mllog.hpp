// :::MLLOG event lines (MLPerf logging format), one JSON object per line:
//   :::MLLOG {"namespace": "", "time_ms": 1700000000000, "event_type": "POINT_IN_TIME", "key": "seed",
//             "value": 1, "metadata": {"file": "trainer.cpp", "lineno": 120}}
// Written by rank 0 to a file beside the run record (and echoed to stdout when asked).
#pragma once

#include <cstdio>
#include <source_location>
#include <string>

#include "core/json.hpp"
#include "workloads/train/mllog_keys.hpp"

namespace dtbench::mllog {

class Logger {
 public:
  Logger() = default;
  // Appends to `path` (created if missing); echo also prints each line to stdout.
  Logger(const std::string& path, bool echo);
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  void event(const char* event_type, const char* key, const Json& value, Json metadata = Json::object(),
             std::source_location where = std::source_location::current());
  void point(const char* key, const Json& value, Json metadata = Json::object(),
             std::source_location where = std::source_location::current()) {
    event(kPointInTime, key, value, std::move(metadata), where);
  }
  void start(const char* key, const Json& value = nullptr, Json metadata = Json::object(),
             std::source_location where = std::source_location::current()) {
    event(kIntervalStart, key, value, std::move(metadata), where);
  }
  void end(const char* key, const Json& value = nullptr, Json metadata = Json::object(),
           std::source_location where = std::source_location::current()) {
    event(kIntervalEnd, key, value, std::move(metadata), where);
  }

 private:
  std::FILE* file_ = nullptr;
  bool echo_ = false;
};

}  // namespace dtbench::mllog
