// DirLock and lock_exclusive on a file system that cannot lock files. This binary defines flock(2) itself, which
// the dynamic linker binds before libc's for every call in the process (the core library's included), so a test can
// make it fail as Lustre mounted noflock does (ENOSYS); otherwise it is the kernel's (the system call).
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/dir_lock.hpp"
#include "core/error.hpp"

namespace fs = std::filesystem;

namespace {
int g_flock_errno = 0;  // 0: the kernel's flock
}  // namespace

extern "C" int flock(int fd, int op) {
  if (g_flock_errno != 0) {
    errno = g_flock_errno;
    return -1;
  }
  return static_cast<int>(::syscall(SYS_flock, fd, op));
}

namespace {
struct Folder {
  Folder() : path(fs::temp_directory_path() / ("dtbench-lock-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Folder() {
    g_flock_errno = 0;
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  fs::path path;
};
}  // namespace

// With the kernel's flock a second lock on the folder is "busy" (RunFailed with the caller's words).
TEST(DirLock, ASecondLockOnTheFolderIsBusy) {
  Folder f;
  dtbench::DirLock first(f.path / ".lock", "busy here");
  try {
    dtbench::DirLock second(f.path / ".lock", "busy here");
    FAIL() << "the second lock was taken";
  } catch (const dtbench::RunFailed& e) {
    EXPECT_EQ(std::string(e.what()), f.path.string() + ": busy here");
  }
}

// A file system without flock: going on with a warning naming the file and the error, not "busy"; any other error
// names the file and the error.
TEST(DirLock, AFileSystemWithoutFlockIsSaidAndNotBusy) {
  Folder f;
  for (int e : {ENOSYS, EOPNOTSUPP, ENOLCK}) {
    g_flock_errno = e;
    testing::internal::CaptureStderr();
    EXPECT_NO_THROW(dtbench::DirLock lock(f.path / ".lock", "busy here"));
    const std::string said = testing::internal::GetCapturedStderr();
    EXPECT_NE(said.find("dtbench: warning: " + (f.path / ".lock").string() + ": this file system cannot lock files (flock: " +
                        std::strerror(e) + "); going on without the lock"),
              std::string::npos)
        << said;
  }
  g_flock_errno = EBADF;
  try {
    dtbench::DirLock lock(f.path / ".lock", "busy here");
    FAIL() << "EBADF was taken";
  } catch (const dtbench::RunFailed& e) {
    EXPECT_EQ(std::string(e.what()), (f.path / ".lock").string() + ": cannot lock: " + std::strerror(EBADF));
  }
}
