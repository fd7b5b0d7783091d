#include "core/dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "core/error.hpp"

namespace dtbench {

bool lock_exclusive(int fd, const std::filesystem::path& file, const std::string& guards) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
  const int e = errno;
  if (e == EWOULDBLOCK) return false;
  if (e == ENOSYS || e == EOPNOTSUPP || e == ENOLCK || e == EINVAL) {
    std::cerr << "dtbench: warning: " << file.string() << ": this file system cannot lock files (flock: "
              << std::strerror(e) << "); going on without the lock, which " << guards << std::endl;
    return true;
  }
  ::close(fd);
  throw RunFailed(file.string() + ": cannot lock: " + std::strerror(e));
}

DirLock::DirLock(const std::filesystem::path& file, const std::string& busy)
    : fd_(::open(file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
  // A folder (or a file that cannot be opened) there is the user's to move: bad input, with the reason (exit 1 said
  // only "cannot create"; a hunt). Another error (a read-only file system, no space) fails the command.
  if (fd_ < 0) {
    const int e = errno;
    const std::string why = file.string() + ": cannot create the campaign's lock file: " + std::strerror(e);
    if (e == EISDIR) throw BadInput(why + " (a folder is there; move it)");
    throw RunFailed(why);
  }
  if (!lock_exclusive(fd_, file, "keeps two commands from working on this folder at once: run one at a time")) {
    ::close(fd_);
    throw RunFailed(file.parent_path().string() + ": " + busy);
  }
}

DirLock::~DirLock() { ::close(fd_); }

}  // namespace dtbench
