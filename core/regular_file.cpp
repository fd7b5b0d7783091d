#include "core/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace dtbench {

bool input_exists(const std::filesystem::path& path, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(path, ec);
  if (link.type() == fs::file_type::not_found) return false;
  if (ec) throw BadInput(path.string() + ": cannot examine the " + what + ": " + ec.message());
  if (!fs::is_symlink(link)) return true;
  const fs::file_status target = fs::status(path, ec);
  if (target.type() == fs::file_type::not_found)
    throw BadInput(path.string() + ": the " + what + " is a symbolic link to " + fs::read_symlink(path, ec).string() +
                   ", which does not exist");
  if (ec) throw BadInput(path.string() + ": cannot examine the " + what + ": " + ec.message());
  return true;
}

std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes, const std::string& what) {
  const std::string p = path.string();
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the check below refuses it anyway.
  const int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) throw BadInput(what + " not found: " + p);
    throw BadInput(p + ": cannot open " + what + ": " + std::strerror(errno));
  }
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_it{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0) throw BadInput(p + ": cannot read " + what + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw BadInput(what + " " + p + " is a directory");
  if (!S_ISREG(st.st_mode)) throw BadInput(p + ": " + what + " is not a regular file (a FIFO, device or socket)");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes)
    throw BadInput(p + ": " + what + " has " + std::to_string(size) + " bytes, more than the " +
                   std::to_string(max_bytes) + " a " + what + " may have");
  std::string out(size, '\0');
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::read(fd, out.data() + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw BadInput(p + ": cannot read " + what + ": " + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got != size)
    throw BadInput(p + ": cannot read " + what + ": read " + std::to_string(got) + " of " + std::to_string(size) +
                   " bytes (the file shrank)");
  return out;
}

}  // namespace dtbench
