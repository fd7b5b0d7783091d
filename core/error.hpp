// Errors and exit codes shared by every module.
//
// Library code throws; the CLI has one top-level handler (apps/main.cpp) that prints the message and
// exits with the code below. Messages name what was wrong: a config key as a JSON pointer, a file and
// byte offset, a rank.
#pragma once

#include <stdexcept>
#include <string>

namespace dtbench {

// Documented exit codes of the dtbench binary (README.md, "Exit codes"); `train`'s 3 for a preempted run is
// kExitPreempted (workloads/train/trainer.hpp), not an error.
enum class ExitCode : int {
  ok = 0,
  run_failed = 1,  // the run started but could not complete (I/O error mid-run, a rank died, wrong results)
  bad_input = 2,   // invalid config, command line, spec or data file: nothing was started or written
};

// Messages echo what was wrong, and what was wrong can be a 50 MB value: a message longer than this keeps
// its beginning (where the key and the reason are) and its end, and says how much was left out. A NUL byte
// (a JSON key may hold one) is written \u0000, as in the JSON text: what() is a C string, and would end there.
inline constexpr size_t kMaxMessageBytes = 4096;
inline std::string capped_message(const std::string& what) {
  std::string shown;
  shown.reserve(what.size());
  for (char c : what) {
    if (c == '\0') shown += "\\u0000";
    else shown += c;
  }
  if (shown.size() <= kMaxMessageBytes) return shown;
  const size_t head = kMaxMessageBytes / 2, tail = kMaxMessageBytes / 4;
  return shown.substr(0, head) + " [... " + std::to_string(shown.size() - head - tail) + " bytes left out ...] " +
         shown.substr(shown.size() - tail);
}

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& what) : std::runtime_error(capped_message(what)), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// Invalid user input (config, flags, data files): exit 2.
class BadInput : public Error {
 public:
  explicit BadInput(const std::string& what) : Error(ExitCode::bad_input, what) {}
};

// A run that started and failed: exit 1.
class RunFailed : public Error {
 public:
  explicit RunFailed(const std::string& what) : Error(ExitCode::run_failed, what) {}
};

// An error that every rank of an MPI job raises identically (a bad config, a check that rank 0 made
// and broadcast): rank 0 reports it and every rank exits with its code, no MPI_Abort needed.
class SameOnAllRanks : public Error {
 public:
  SameOnAllRanks(ExitCode code, const std::string& what) : Error(code, what) {}
};

// Ends the program with `code` after the message (if any) was already printed.
class ExitRequest : public Error {
 public:
  explicit ExitRequest(int code) : Error(static_cast<ExitCode>(code), ""), exit_code(code) {}
  int exit_code;
};

}  // namespace dtbench
