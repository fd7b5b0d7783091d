#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "core/error.hpp"
#include "core/json.hpp"
#include "core/regular_file.hpp"

namespace dtbench {
namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

// Why a probe file could not be created in a folder that exists. ENOENT there is a file system that creates no
// files (procfs, sysfs): strerror's "No such file or directory" alone would read as if the folder were missing.
std::string cannot_create_text() {
  if (errno == ENOENT) return "its file system creates no files (" + errno_text() + ")";
  return errno_text();
}

fs::path folder_of(const fs::path& path) {
  fs::path dir = path.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

// Writes all of `text` to fd; returns false on error (errno set).
bool write_all(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

// Proves `dir` writable with a probe file, created and removed (access(2) says yes to root even on a
// file system that refuses the write). False with errno set when it cannot be created.
bool folder_writable(const fs::path& dir) {
  // A unique name (mkstemp): ranks of one job probe a shared folder at once, and two of them may have one pid (a PID
  // namespace per container), where a name from the pid made one of them fail with EEXIST.
  std::string probe = (dir / ".dtbench-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) return false;
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

// The hidden name beside `path` that write_file_atomic writes first, as a mkstemp template. (Built with
// insert/append: GCC 12 warns falsely (-Wrestrict) about `"." + string`.)
std::string temporary_template(const fs::path& path) {
  std::string name = path.filename().string();
  name.insert(name.begin(), '.');
  name.append(".tmp-XXXXXX");
  return (folder_of(path) / name).string();
}

// Whether write_file_atomic could write `path`: its temporary file, of the very name length, created and removed (a
// name that fits its folder can be too long with the 12 bytes the temporary adds). "" or why not.
std::string cannot_write_beside(const fs::path& path) {
  std::string probe = temporary_template(path);
  const int fd = ::mkstemp(probe.data());
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
    return "";
  }
  if (errno == ENAMETOOLONG)
    return "the file name (" + std::to_string(path.filename().string().size()) + " bytes) is too long for its folder "
           "once written through the temporary file beside it, 12 bytes longer";
  return "folder " + folder_of(path).string() + " is not writable: " + cannot_create_text();
}

// What a write of `path` replaces: the file a symbolic link names (as a shell's `>` writes through it), else the
// path. The rename would replace the link itself: `--output /dev/stdout` with stdout a file made /dev/stdout a
// regular file for every process on the machine (found by a hunt). "" when the link leads nowhere.
fs::path write_target(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_symlink(path, ec)) return path;
  fs::path target = fs::canonical(path, ec);
  return ec ? fs::path() : target;
}

}  // namespace

size_t remove_left_temporaries(const fs::path& dir, const std::vector<std::string>& names) {
  static const std::string suffix = ".tmp-XXXXXX";
  size_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.size() <= 1 + suffix.size() || n[0] != '.' || n.compare(n.size() - suffix.size(), 5, ".tmp-") != 0) continue;
    const std::string of = n.substr(1, n.size() - 1 - suffix.size());
    if (!names.empty() && std::find(names.begin(), names.end(), of) == names.end()) continue;
    std::error_code e;
    if (it->symlink_status(e).type() == fs::file_type::regular && fs::remove(it->path(), e)) ++removed;
  }
  return removed;
}

void check_output_file(const fs::path& path, const std::string& option) {
  std::error_code ec;
  if (path.empty()) throw BadInput(option + ": an empty file name");
  if (fs::is_directory(path, ec)) throw BadInput(option + ": " + path.string() + " is a folder, not a file");
  // "x/" names a folder whether or not one is there ("is a folder" was said of a path that does not exist; a hunt).
  if (!path.has_filename())
    throw BadInput(option + ": " + path.string() + " ends with a '/', the name of a folder; give a file's name");
  // The file is written beside and renamed over the path: never over a device or a pipe (as root, /dev/null).
  const fs::file_type type = fs::status(path, ec).type();
  if (type != fs::file_type::not_found && type != fs::file_type::regular && type != fs::file_type::none)
    throw BadInput(option + ": " + path.string() + " is not a regular file (a device, a pipe or a socket)");
  const fs::path target = write_target(path);
  if (target.empty()) {
    std::error_code loop;
    (void)fs::canonical(path, loop);  // a loop of links is no link to a missing file (its message said so; a hunt)
    throw BadInput(option + ": " + path.string() + " is a symbolic link to " + fs::read_symlink(path, ec).string() +
                   (loop == std::errc::too_many_symbolic_link_levels ? ", a loop of links that leads to no file"
                                                                      : ", which does not exist") +
                   " (a link is written through)");
  }
  const fs::path dir = folder_of(target);
  if (!fs::is_directory(dir, ec))
    throw BadInput(option + ": " + (fs::exists(dir, ec) ? dir.string() + " is not a folder" : "folder " + dir.string() + " does not exist"));
  if (const std::string why = cannot_write_beside(target); !why.empty()) throw BadInput(option + ": " + why);
}

fs::path resolved_path(const fs::path& path) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? fs::absolute(path).lexically_normal() : r;
}

void check_not_an_input(const fs::path& output, const std::string& option,
                        const std::vector<std::pair<std::string, fs::path>>& inputs) {
  const fs::path out = resolved_path(output);
  for (const auto& [what, path] : inputs)
    if (!path.empty() && resolved_path(path) == out)
      throw BadInput(option + ": " + output.string() + " is " + what + " (" + path.string() + "); give another path");
}

void check_input_not_written(const fs::path& input, const std::string& what, const std::vector<fs::path>& folders,
                             const std::vector<fs::path>& files, const std::string& writer, const std::string& tail) {
  const fs::path at = resolved_path(input);
  for (const fs::path& folder : folders) {
    const fs::path f = resolved_path(folder);
    if (std::mismatch(f.begin(), f.end(), at.begin(), at.end()).first == f.end())
      throw BadInput(input.string() + ": " + what + " lies in " + folder.string() + ", where " + writer +
                     " writes its files; keep it elsewhere" + tail);
  }
  for (const fs::path& file : files)
    if (resolved_path(file) == at)
      throw BadInput(input.string() + ": " + what + " is " + file.string() + ", which " + writer +
                     " writes; keep it elsewhere" + tail);
}

void check_campaign_kind(const fs::path& dir, const std::string& own) {
  static const std::pair<const char*, const char*> kinds[] = {
      {"campaign.json", "a dtbench sweep campaign"}, {"lineage.json", "a dtbench pbt campaign"},
      {"reproduce.json", "a dtbench reproduce report"}};
  // The campaign's own files are read before anything is written: a loop of links or a link to nothing there was an
  // internal error, or a late one after a whole interval had trained (found by a hunt).
  for (const char* own_file : {"campaign.json", "lineage.json", "reproduce.json", "spec.json", "jobs.json", ".lock"})
    input_exists(dir / own_file, "campaign's file");
  for (const auto& [index, what] : kinds)
    if (own != index && input_exists(dir / index, "campaign's file"))
      throw BadInput((dir / index).string() + ": this folder holds " + what + "; use another --out");
  // A pbt stopped in its first interval: a sweep replaced its spec.json and the pbt could not go on (found by a hunt).
  if (own != "lineage.json" && pbt_campaign_before_its_lineage(dir))
    throw BadInput((dir / "spec.json").string() + ": this folder holds a dtbench pbt campaign that has not finished "
                   "its first interval (no lineage.json yet); rerun its dtbench pbt, or use another --out");
}

bool pbt_campaign_before_its_lineage(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "lineage.json", ec) || !fs::is_regular_file(dir / "spec.json", ec)) return false;
  try {
    const Json spec = read_json_file((dir / "spec.json").string(), "spec");
    return spec.is_object() && spec.contains("population");
  } catch (const BadInput&) {
    return false;
  }
}

// The names of the folders still to be made below `at` (the nearest that exists) fit the file system's limit:
// lstat(2) stops at the first name that does not exist, so a name too long below it was only found by mkdir(2),
// after the folders above it had been made (found by a hunt). A whole path too long is lstat's own error.
static void check_names_fit(const fs::path& abs, const fs::path& at, const std::string& option) {
  const long name_max = ::pathconf(at.c_str(), _PC_NAME_MAX);
  const size_t longest = name_max > 0 ? size_t(name_max) : size_t(NAME_MAX);
  for (const fs::path& name : abs.lexically_relative(at)) {
    const std::string& text = name.native();
    if (text.size() <= longest) continue;
    size_t cut = 24;  // shown cut, at a UTF-8 character's start
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    throw BadInput(option + ": " + abs.string() + ": the name " + text.substr(0, cut) + "... is " +
                   std::to_string(text.size()) + " bytes long; the file system takes at most " +
                   std::to_string(longest));
  }
}

void check_output_folder(const fs::path& dir, const std::string& option, bool writable) {
  std::error_code ec;
  if (dir.empty()) throw BadInput(option + ": an empty folder name");
  const fs::path abs = fs::absolute(dir, ec);
  if (ec) throw BadInput(option + ": " + dir.string() + ": " + ec.message());
  // Up to the nearest name that exists (a link included: one to nothing is not a folder); a name that cannot be
  // looked at (a folder that cannot be searched, a loop of links) is the error itself.
  fs::path at = abs;
  for (;;) {
    std::error_code e;
    const fs::file_status st = fs::symlink_status(at, e);
    if (e && e != std::errc::no_such_file_or_directory && e != std::errc::not_a_directory)
      throw BadInput(option + ": " + at.string() + ": " + e.message());
    if (fs::exists(st) || !at.has_relative_path()) break;
    at = at.parent_path();
  }
  if (!fs::is_directory(at, ec))
    throw BadInput(option + ": " + at.string() + (at == abs ? " exists and is not a folder" : " is not a folder"));
  check_names_fit(abs, at, option);
  if (writable && !folder_writable(at))
    throw BadInput(option + ": " + (at == abs ? "folder " + dir.string() + " is not writable"
                                              : "cannot create " + dir.string() + " in " + at.string()) +
                   ": " + cannot_create_text());
}

void check_writable(const fs::path& path, bool must_be_new) {
  fs::path dir = folder_of(path);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw BadInput(dir.string() + ": cannot create output folder: " + ec.message());
  const fs::file_status st = fs::symlink_status(path, ec);
  if (must_be_new && (fs::exists(st) || (ec && ec != std::errc::no_such_file_or_directory)))
    throw BadInput(path.string() + ": a record of that name exists already; records are never overwritten "
                   "(choose another /output/record or /name, or move the old record)");
  if (!folder_writable(dir)) throw BadInput(dir.string() + ": output folder is not writable: " + cannot_create_text());
  if (const std::string why = cannot_write_beside(path); !why.empty()) throw BadInput(path.string() + ": " + why);
}

void write_file_atomic(const fs::path& given, const std::string& text, bool must_be_new) {
  // A new file is never written through a link (link(2) refuses the name a link holds); a replaced one is.
  const fs::path path = must_be_new ? given : write_target(given);
  if (path.empty()) throw RunFailed(given.string() + ": a symbolic link to a file that does not exist");
  fs::path dir = folder_of(path);
  std::string tmpl = temporary_template(path);
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw RunFailed(path.string() + ": cannot create temporary file: " + errno_text());
  ::fchmod(fd, 0644);
  bool ok = write_all(fd, text) && ::fsync(fd) == 0;
  int saved = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(tmpl.c_str());
    errno = saved;
    throw RunFailed(path.string() + ": write failed: " + errno_text());
  }
  if (must_be_new) {
    if (::link(tmpl.c_str(), path.c_str()) != 0) {
      saved = errno;
      ::unlink(tmpl.c_str());
      // Checked free before any work (check_writable): one that appeared since fails the run that made it (exit
      // 1), as other write failures do; exit 2 says nothing was started.
      if (saved == EEXIST)
        throw RunFailed(path.string() + ": exists already (it appeared after the start); an existing record or "
                        "output is never overwritten");
      errno = saved;
      throw RunFailed(path.string() + ": cannot create: " + errno_text());
    }
    ::unlink(tmpl.c_str());
  } else if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    saved = errno;
    ::unlink(tmpl.c_str());
    errno = saved;
    throw RunFailed(path.string() + ": cannot rename into place: " + errno_text());
  }
  // Make the new directory entry durable too.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_json_atomic(const fs::path& path, const Json& doc, bool must_be_new) {
  write_file_atomic(path, doc.dump(2) + "\n", must_be_new);
}

}  // namespace dtbench
