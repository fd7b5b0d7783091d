// :::MLLOG event lines (MLPerf logging format), one JSON object per line:
//   :::MLLOG {"namespace": "", "time_ms": 1700000000000, "event_type": "POINT_IN_TIME", "key": "seed",
//             "value": 1, "metadata": {"file": "trainer.cpp", "lineno": 120}}
// Written by rank 0 to a file beside the run record (and echoed to stdout when asked).
//
// Events are kept in memory until open(): a run logs init_start before it has validated its inputs, and
// creates no file until they are (a bad input leaves nothing behind). Each line carries the time of its
// event, not of its writing. The file follows the record's policy: one run owns it (an exclusive lock
// held for the run; a file left by a run that died is replaced, one of a live run refuses the new run),
// and a write that fails is a failed run, not a silently short log.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "workloads/train/mllog_keys.hpp"

namespace dtbench::mllog {

// The file and line of the call that logged an event (the MLLOG metadata). Not std::source_location: clang 14,
// which builds the sanitizer job and the fuzzers, lacks it; its builtins give the same place, the caller's,
// when they are default arguments.
struct SourcePlace {
  const char* file;
  unsigned line;
  static constexpr SourcePlace here(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    return {file, line};
  }
};

class Logger {
 public:
  explicit Logger(bool echo) : echo_(echo) {}
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // Creates (or, with append, continues: a resumed run) the file at `path`, takes its lock and writes
  // the events so far. Appending with keep_bytes >= 0 first cuts a longer file back to that length: the events the
  // previous attempt logged after its checkpoint (steps the resumed run does again), and a line a full disk cut
  // short. BadInput when another live run holds it; RunFailed on I/O errors.
  // `keep_from`: where keep_bytes comes from (a checkpoint's header), named when it does not fit the file.
  void open(const std::string& path, bool append, int64_t keep_bytes = -1, const std::string& keep_from = "");
  // The file's length in bytes so far (what a checkpoint notes, so that a resumed run drops what came after it).
  int64_t bytes() const;
  // Forgets the events logged before open() (a resumed run's second init_start).
  void discard_pending() { pending_.clear(); }

  void event(const char* event_type, const char* key, const Json& value, Json metadata = Json::object(),
             SourcePlace where = SourcePlace::here());
  void point(const char* key, const Json& value, Json metadata = Json::object(),
             SourcePlace where = SourcePlace::here()) {
    event(kPointInTime, key, value, std::move(metadata), where);
  }
  // Interval events. `key` is the start's key ("epoch_start"); `end` names the matching stop key.
  void start(const char* key, const Json& value = nullptr, Json metadata = Json::object(),
             SourcePlace where = SourcePlace::here()) {
    open_[key] = metadata;
    event(kIntervalStart, key, value, std::move(metadata), where);
  }
  void end(const char* key, const Json& value = nullptr, Json metadata = Json::object(),
           SourcePlace where = SourcePlace::here()) {
    open_.erase(start_key(key));
    event(kIntervalEnd, key, value, std::move(metadata), where);
  }
  // MLPerf's timed run ends at the evaluation that reaches the quality target; a run that trains on (no
  // /eval/stop_at_target) keeps its whole curve in its record, but its log stops there: from here on the file takes
  // no event but run_stop, which carries this moment's time (or `at_ms`'s, a resumed run's), so that the log's epochs
  // and time to train are the target's, as the record's time to accuracy is (MLCommons' rcp_checker takes the last
  // eval_accuracy before run_stop: it read the run's last evaluation). Returns that time.
  int64_t end_timed_run(int64_t at_ms = -1);

  // An interval started elsewhere (a resumed run's epoch, begun by its first attempt) counts as open.
  void mark_open(const char* start, Json metadata) { open_[start] = std::move(metadata); }
  // Ends the interval of `stop` ("epoch_stop") if its start is still open, with the start's metadata: a run
  // that ends within an epoch closes it, so the log has the epoch_stop MLPerf's rules ask for.
  void end_open(const char* stop, SourcePlace where = SourcePlace::here()) {
    auto it = open_.find(start_key(stop));
    if (it != open_.end()) end(stop, nullptr, it->second, where);
  }

 private:
  void write(const std::string& line);
  // "epoch_stop" -> "epoch_start" (MLPerf pairs interval keys this way).
  static std::string start_key(const std::string& stop) {
    return stop.size() > 5 && stop.compare(stop.size() - 5, 5, "_stop") == 0 ? stop.substr(0, stop.size() - 5) + "_start"
                                                                                 : stop;
  }

  std::FILE* file_ = nullptr;
  std::string path_;
  bool echo_ = false;
  std::vector<std::string> pending_;  // lines logged before open()
  std::map<std::string, Json> open_;  // started intervals not yet ended: start key -> metadata
  int64_t timed_run_end_ms_ = -1;     // end_timed_run's time; -1 while the timed run goes on
};

}  // namespace dtbench::mllog
