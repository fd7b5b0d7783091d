#include "core/dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/error.hpp"

namespace dtbench {

DirLock::DirLock(const std::filesystem::path& file, const std::string& busy)
    : fd_(::open(file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
  if (fd_ < 0) throw RunFailed(file.string() + ": cannot create the campaign's lock file");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    throw RunFailed(file.parent_path().string() + ": " + busy);
  }
}

DirLock::~DirLock() { ::close(fd_); }

}  // namespace dtbench
