// Atomic, never-overwriting writes: the record either appears whole or not at all.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace fs = std::filesystem;
using dtbench::BadInput;

namespace {
// An empty folder for one test, removed when the test ends (the name holds the pid, so one left behind would
// never be reused).
struct FreshDir {
  explicit FreshDir(const std::string& name)
      : path(fs::temp_directory_path() / ("dtbench-atomic-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~FreshDir() {
    std::error_code ignored;  // a destructor must not throw; a folder left behind fails nothing
    fs::remove_all(path, ignored);
  }
  FreshDir(const FreshDir&) = delete;
  FreshDir& operator=(const FreshDir&) = delete;
  fs::path path;
};
size_t entries(const fs::path& d) { return std::distance(fs::directory_iterator(d), fs::directory_iterator{}); }
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

TEST(AtomicFile, WritesWholeFileAndLeavesNoTemporary) {
  FreshDir scratch("write");
  const fs::path& d = scratch.path;
  dtbench::write_json_atomic(d / "r.json", {{"a", 1}}, true);
  EXPECT_EQ(slurp(d / "r.json"), "{\n  \"a\": 1\n}\n");
  EXPECT_EQ(entries(d), 1u);
}

// A kill inside write_file_atomic leaves ".NAME.tmp-XXXXXX"; a sweep's rerun removes those of its own files, and
// nothing else: not the files themselves, not another hidden file, not a folder of that form.
TEST(AtomicFile, LeftTemporariesOfTheGivenNamesAreRemoved) {
  FreshDir scratch("left");
  const fs::path& d = scratch.path;
  for (const char* n : {"spec.json", ".spec.json.tmp-a1B2c3", ".jobs.json.tmp-zzzzzz", ".notes.tmp-123456", ".lock",
                        ".x.tmp-1234567", "a.tmp-123456"})
    std::ofstream(d / n) << "x";
  fs::create_directory(d / ".campaign.json.tmp-abcdef");
  EXPECT_EQ(dtbench::remove_left_temporaries(d, {"spec.json", "campaign.json", "jobs.json"}), 2u);
  EXPECT_TRUE(fs::exists(d / "spec.json"));
  EXPECT_FALSE(fs::exists(d / ".spec.json.tmp-a1B2c3"));
  EXPECT_FALSE(fs::exists(d / ".jobs.json.tmp-zzzzzz"));
  EXPECT_TRUE(fs::exists(d / ".notes.tmp-123456"));  // not one of the names
  EXPECT_TRUE(fs::exists(d / ".campaign.json.tmp-abcdef"));  // a folder
  EXPECT_EQ(dtbench::remove_left_temporaries(d), 1u);  // every name: .notes's
  EXPECT_EQ(entries(d), 5u);  // spec.json, .lock, .x.tmp-1234567, a.tmp-123456 and the folder
}

TEST(AtomicFile, NeverOverwritesARecord) {
  FreshDir scratch("nooverwrite");
  const fs::path& d = scratch.path;
  dtbench::write_json_atomic(d / "r.json", {{"a", 1}}, true);
  // At the end of a run, a record that appeared since the start fails it (exit 1): the run did start.
  EXPECT_THROW(dtbench::write_json_atomic(d / "r.json", {{"a", 2}}, true), dtbench::RunFailed);
  EXPECT_EQ(slurp(d / "r.json"), "{\n  \"a\": 1\n}\n");
  EXPECT_EQ(entries(d), 1u) << "the temporary file must not outlive the failure";
  // check_writable refuses an existing record before any work starts.
  try {
    dtbench::check_writable(d / "r.json", true);
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("records are never overwritten"), std::string::npos);
  }
  // Files that are meant to be replaced (checkpoints) can be.
  dtbench::write_json_atomic(d / "c.json", {{"v", 1}}, false);
  dtbench::write_json_atomic(d / "c.json", {{"v", 2}}, false);
  EXPECT_EQ(slurp(d / "c.json"), "{\n  \"v\": 2\n}\n");
}

TEST(AtomicFile, UnwritableFolderIsReportedUpFront) {
  FreshDir scratch("unwritable");
  const fs::path& d = scratch.path;
  std::ofstream(d / "plain-file") << "x";
  // A folder below a regular file cannot be created (works even as root, unlike permission bits).
  try {
    dtbench::check_writable(d / "plain-file" / "sub" / "r.json", true);
    FAIL() << "expected BadInput";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()).rfind((d / "plain-file" / "sub").string() + ": cannot create output folder", 0), 0u)
        << e.what();
  }
  dtbench::check_writable(d / "new" / "deeper" / "r.json", true);
  EXPECT_TRUE(fs::is_directory(d / "new" / "deeper"));
  EXPECT_EQ(entries(d / "new" / "deeper"), 0u) << "the probe file must be removed";
}

// An output named by a symbolic link is written through it, as a shell's `>` writes: the rename had replaced the link
// itself (`--output /dev/stdout`, stdout a file, made /dev/stdout a regular file for the whole machine). A link to
// nothing is refused up front; a new record is never written through a link.
TEST(AtomicFile, AnOutputThatIsALinkIsWrittenThroughIt) {
  FreshDir scratch("link");
  const fs::path& d = scratch.path;
  fs::create_directories(d / "real");
  std::ofstream(d / "real" / "out.md") << "old";
  fs::create_symlink(d / "real" / "out.md", d / "link.md");
  fs::create_symlink("link.md", d / "chain.md");  // a link to a link, relative
  dtbench::check_output_file(d / "chain.md", "--output");
  dtbench::write_file_atomic(d / "chain.md", "new", false);
  EXPECT_TRUE(fs::is_symlink(d / "chain.md"));
  EXPECT_TRUE(fs::is_symlink(d / "link.md"));
  EXPECT_EQ(slurp(d / "real" / "out.md"), "new");
  EXPECT_EQ(entries(d / "real"), 1u);  // the temporary went beside the target and is gone
  EXPECT_EQ(entries(d), 3u);
  fs::create_symlink(d / "nowhere" / "x.md", d / "dangling.md");
  try {
    dtbench::check_output_file(d / "dangling.md", "--output");
    FAIL() << "a link to nothing was accepted";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), "--output: " + (d / "dangling.md").string() + " is a symbolic link to " +
                                         (d / "nowhere" / "x.md").string() +
                                         ", which does not exist (a link is written through)");
  }
  EXPECT_THROW(dtbench::write_file_atomic(d / "dangling.md", "x", false), dtbench::RunFailed);
  EXPECT_TRUE(fs::is_symlink(d / "dangling.md"));
  EXPECT_THROW(dtbench::write_file_atomic(d / "link.md", "x", true), dtbench::RunFailed);  // must_be_new
  EXPECT_EQ(slurp(d / "real" / "out.md"), "new");
}
