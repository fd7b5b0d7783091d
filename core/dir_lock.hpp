// An exclusive lock on a campaign folder for the life of the process (flock: released when the process dies, however
// it dies), so that two commands never work on one folder at once.
#pragma once

#include <filesystem>
#include <string>

namespace dtbench {

// flock(LOCK_EX | LOCK_NB) on `fd`: true when taken, false when another process holds it. A file system without
// flock (Lustre mounted noflock, some NFS set-ups: ENOSYS, EOPNOTSUPP, ENOLCK, EINVAL) was read as "another process holds
// it" and nothing ran there (found by a review): it is said on standard error, naming `file` and what the lock
// guards against, and counts as taken. Other errors close `fd` and are RunFailed naming the file.
bool lock_exclusive(int fd, const std::filesystem::path& file, const std::string& guards);

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
