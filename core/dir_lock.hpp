// An exclusive lock on a campaign folder for the life of the process (flock: released when the process dies, however
// it dies), so that two commands never work on one folder at once.
#pragma once

#include <filesystem>
#include <string>

namespace dtbench {

class DirLock {
 public:
  // Creates and locks `file` (close-on-exec). RunFailed "<folder>: <busy>" when another process holds it, or naming
  // the file when it cannot be created.
  DirLock(const std::filesystem::path& file, const std::string& busy);
  ~DirLock();
  // The descriptor, for a child that should hold the lock as long as it lives (pbt's members).
  int fd() const { return fd_; }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_;
};

}  // namespace dtbench
