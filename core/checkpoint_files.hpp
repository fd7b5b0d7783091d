// Checkpoints for preemption and resume.
//
// A checkpoint is a folder <record>.ckpt/ holding one file per rank and step (rank-<r>.step-<n>.bin: that
// rank's weights, batch-norm buffers, optimizer and schedule state, which differ between ranks in local SGD
// and in batch-norm statistics) and header.json (the resolved config, the step to continue from, the
// elapsed time, the curve so far and the other run-level state). Ranks write their files first
// (atomically), then rank 0 writes the header, so a header always names complete rank files. Because a new
// checkpoint's files have new names, the previous checkpoint stays whole until the new header replaces
// its header: a write that fails half way (a full disk) never damages it. Each rank file repeats the step and
// its rank, so a file renamed by hand is detected, and ends with a CRC-32 of its bytes, so a damaged one is too.
// The header holds its own CRC-32 and each rank file's, so a damaged header, and a rank file of another run or
// checkpoint with the same step and shape, are detected as well.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace dtbench {

struct RankState {
  int64_t step = 0;
  std::vector<float> params, buffers;
  std::vector<uint8_t> optimizer;
  uint64_t optimizer_offset = 0;  // read: the byte of the file at which `optimizer` starts
  Json extra = Json::object();  // schedule state and other small per-rank state
  uint32_t crc = 0;             // read: the file's CRC-32, when has_crc (not in files from before it had one)
  bool has_crc = false;
};

// Writes this rank's file for step s.step (atomically) and returns its CRC-32, which the header lists for each rank
// (header "rank_crc32"); RunFailed on an I/O error.
uint32_t write_rank_state(const std::filesystem::path& dir, int rank, const RankState& s);
// The file of `rank` at `step` in the checkpoint folder `dir`.
std::filesystem::path rank_file(const std::filesystem::path& dir, int rank, int64_t step);
// Removes this rank's files of every step but `keep`. Best effort: a file left behind is never read, since
// the header names its step.
void remove_rank_states(const std::filesystem::path& dir, int rank, int64_t keep);
// Reads this rank's file; throws BadInput naming the file and byte offset when it is damaged, or when
// its step differs from `expect_step`.
RankState read_rank_state(const std::filesystem::path& dir, int rank, int64_t expect_step);

// Header: written by rank 0 after every rank's file exists, with the CRC-32 of its own contents ("crc32": of the
// compact JSON text of the rest), which read_header checks and removes; with "rank_crc32" (each rank's file's
// CRC-32, as 8 hex digits), a rank file of another run or checkpoint is told apart even at the same step and shape.
void write_header(const std::filesystem::path& dir, const Json& header);
// Removes the temporary files (".header.json.tmp-XXXXXX", core/atomic_file) that a header write killed midway
// left in dir. Only where no rank writes a header: ranks of one node-local folder may write theirs together.
void remove_header_temporaries(const std::filesystem::path& dir);
// The ranks' [fewest, most] compute threads as a header holds them (/threads, and a preemption's threads_changed):
// BadInput "<at>: ..." otherwise.
void check_thread_counts(const Json& v, const std::string& at);
// Each rank's node as a header holds it (/nodes, and a preemption's nodes_changed): `ranks` integers numbered from 0
// in the order of each node's lowest rank, as Comm::nodes() numbers them (any count >= 1 when `ranks` is 0).
// BadInput "<at>: ..." otherwise.
void check_node_layout(const Json& v, const std::string& at, int64_t ranks);
// Empty JSON when there is no checkpoint in dir; else an object with "config" and "state" objects and "ranks", a
// rank count, and "rank_crc32" if present one CRC per rank (BadInput naming the file otherwise, and when its
// "crc32" does not match: a header from before it had one is read without).
Json read_header(const std::filesystem::path& dir);
// BadInput when `rank`'s file read from `dir` is not the one `header` lists for it (its "rank_crc32").
void check_rank_file(const std::filesystem::path& dir, const Json& header, int rank, const RankState& s);
// Reads the header and every rank's file of the checkpoint in `dir` as a run resuming from it would read them, each
// against its CRC-32 and the header's list; BadInput naming the file (and byte offset) otherwise, and when there is
// none. For what continues from checkpoints written earlier without loading them itself (dtbench pbt): a damaged one
// was found only by the member that loaded it, which then failed and was replaced, exit 0 (found by a hunt).
void verify_checkpoint(const std::filesystem::path& dir);

}  // namespace dtbench
