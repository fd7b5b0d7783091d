// Files that are never seen half-written: content goes to a temporary file in the same folder, is
// flushed to disk, and only then appears under its final name (rename is atomic within a folder).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/json.hpp"

namespace dtbench {

// Checks, before any work starts, that `path` can be written later: creates its folder, proves the
// folder writable with a probe file, and (when must_be_new) refuses a path that already exists.
// Throws BadInput naming the path.
void check_writable(const std::filesystem::path& path, bool must_be_new);

// Checks, before any work starts, that `path` names a file that can be written later, creating nothing:
// not a folder, a device or a pipe, in a folder that exists and is writable. Throws BadInput "<option>: ..." naming
// the path.
void check_output_file(const std::filesystem::path& path, const std::string& option);

// The path a file would be written at, links resolved as far as they exist: two names of one file compare equal.
std::filesystem::path resolved_path(const std::filesystem::path& path);

// Throws BadInput "<input>: <what> lies in <folder>, where <writer> writes its files; keep it elsewhere<tail>" when
// the input file lies inside one of `folders`, and "... is <file>, which <writer> writes; ..." when it is one of
// `files`: a campaign's spec or base config where the campaign's own files go would be replaced (sweep and pbt).
void check_input_not_written(const std::filesystem::path& input, const std::string& what,
                             const std::vector<std::filesystem::path>& folders,
                             const std::vector<std::filesystem::path>& files, const std::string& writer,
                             const std::string& tail = "");

// Throws BadInput "<option>: <output> is <what> (<path>); give another path" when `output` names one of the files
// the command reads (`inputs`: what each is, and its path), which the write would replace.
void check_not_an_input(const std::filesystem::path& output, const std::string& option,
                        const std::vector<std::pair<std::string, std::filesystem::path>>& inputs);

// Checks, before any work starts, that `dir` is a folder or can be created as one, creating nothing: a path that
// exists is a writable folder, and the nearest existing folder above one that does not is a writable folder (not a
// file, not /proc). Throws BadInput "<option>: ..." naming the path. `writable` false (a dry run, which writes
// nothing and may look at a folder it cannot write): the folder's shape only, no probe file.
void check_output_folder(const std::filesystem::path& dir, const std::string& option, bool writable = true);

// A folder holds one kind of campaign, named by its index file: "campaign.json" (dtbench sweep), "lineage.json"
// (dtbench pbt) or "reproduce.json" (dtbench reproduce). Throws BadInput naming the file when `dir` holds another
// kind's than `own`'s (its files would be written beside the other's, or replace its spec.json).
// A pbt campaign in (or stopped in) its first interval has no lineage.json yet, only its spec.json (a pbt spec: it
// has a /population) and its members' files: counted as a pbt campaign too.
void check_campaign_kind(const std::filesystem::path& dir, const std::string& own);

// Whether `dir` holds a pbt campaign that has not finished its first interval: a spec.json with a /population, no
// lineage.json (a spec.json that cannot be read is no such campaign).
bool pbt_campaign_before_its_lineage(const std::filesystem::path& dir);

// Writes `text` to `path` atomically. must_be_new: the final name is created with link(2), which
// fails rather than replace an existing file, so even two racing writers never overwrite a record.
// Otherwise the file is replaced with rename(2). Throws RunFailed on I/O errors and when a new file's name is
// taken (callers check it free before any work: check_writable). The temporary file never outlives a failure.
void write_file_atomic(const std::filesystem::path& path, const std::string& text, bool must_be_new);

// JSON with two-space indentation and a trailing newline.
void write_json_atomic(const std::filesystem::path& path, const Json& doc, bool must_be_new);

// A process killed inside write_file_atomic leaves its temporary file (".NAME.tmp-XXXXXX") behind. Removes those of
// `names` in `dir`, or of every name where `names` is empty; only for a caller that alone writes there (under the
// folder's lock). Returns how many were removed.
size_t remove_left_temporaries(const std::filesystem::path& dir, const std::vector<std::string>& names = {});

}  // namespace dtbench
