// Checkpoint files against damage: a rank file round-trips bit for bit; a flipped byte, bytes appended or cut off,
// and extra state of the wrong shape are BadInput naming the file; a format-1 file (before the CRC-32) is still
// read; a header of the wrong shape names the file and the key; a loop of links is an error, not a missing file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.hpp"
#include "core/checkpoint_files.hpp"

using namespace dtbench;
namespace fs = std::filesystem;

namespace {

class CheckpointFiles : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / ("dtbench-ckpt-test-" + std::to_string(::getpid())) / "run.ckpt";
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir.parent_path()); }

  static RankState sample() {
    RankState s;
    s.step = 6;
    s.params = {1.5f, -2.25f, 3.0f};
    s.buffers = {0.5f};
    s.optimizer = {1, 2, 3, 4, 5};
    s.extra = {{"schedule", Json::object()}, {"backend", {{"k", 1}}}};
    return s;
  }
  std::string bytes() const {
    std::ifstream in(rank_file(dir, 0, 6), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  void put(const std::string& b) const { std::ofstream(rank_file(dir, 0, 6), std::ios::binary) << b; }
  std::string error() const {
    try {
      read_rank_state(dir, 0, 6);
    } catch (const BadInput& e) {
      return e.what();
    }
    return "no error";
  }
  std::string header_error(const std::string& text) const {
    std::ofstream(dir / "header.json") << text;
    try {
      read_header(dir);
    } catch (const BadInput& e) {
      return e.what();
    }
    return "no error";
  }
};

TEST_F(CheckpointFiles, RoundTripsAndDetectsDamage) {
  write_rank_state(dir, 0, sample());
  const RankState back = read_rank_state(dir, 0, 6);
  EXPECT_EQ(back.params, sample().params);
  EXPECT_EQ(back.buffers, sample().buffers);
  EXPECT_EQ(back.optimizer, sample().optimizer);
  EXPECT_EQ(back.extra, sample().extra);

  const std::string good = bytes();
  const std::string file = rank_file(dir, 0, 6).string();
  std::string flipped = good;
  flipped[8 + 8 + 8 + 1] ^= 0x10;  // a bit of the first weight
  put(flipped);
  EXPECT_EQ(error(), file + ": damaged checkpoint: its CRC-32 (at byte " + std::to_string(good.size() - 4) +
                         ") does not match its contents, or it was cut short");
  put(good + "x");
  EXPECT_NE(error().find("its CRC-32"), std::string::npos) << error();
  put(good.substr(0, 20));
  EXPECT_NE(error().find("its CRC-32"), std::string::npos) << error();
  put(good.substr(0, 6));
  EXPECT_NE(error().find("wrong magic number at byte 0"), std::string::npos) << error();

  // Rank 1's file under rank 0's name (two model-parallel shards of one size, swapped by hand) was read as rank 0's.
  write_rank_state(dir, 1, sample());
  fs::rename(rank_file(dir, 1, 6), rank_file(dir, 0, 6));
  EXPECT_EQ(error(), file + ": rank file holds the state of rank 1, not of rank 0 (a mixed checkpoint: rank files "
                            "renamed?)");

  RankState odd = sample();
  odd.extra = Json::array({1, 2});
  write_rank_state(dir, 0, odd);
  EXPECT_EQ(error(), file + ": damaged extra state (expected an object with the schedule's state)");
}

// What a kill during a write leaves: the hidden temporaries of core/atomic_file. The header's go with
// remove_header_temporaries, a rank's with remove_rank_states; the checkpoint itself and other files stay.
TEST_F(CheckpointFiles, TemporariesOfAKilledWriteAreRemoved) {
  write_rank_state(dir, 0, sample());
  write_header(dir, Json{{"config", Json::object()}, {"state", Json::object()}, {"ranks", 1}});
  for (const char* name : {".header.json.tmp-a1B2c3", ".header.json.tmp-zzzzzz", ".rank-0.step-4.bin.tmp-q1w2e3"})
    std::ofstream(dir / name) << "cut short";
  std::ofstream(dir / "notes.txt") << "a user's";
  remove_header_temporaries(dir);
  EXPECT_FALSE(fs::exists(dir / ".header.json.tmp-a1B2c3"));
  EXPECT_FALSE(fs::exists(dir / ".header.json.tmp-zzzzzz"));
  EXPECT_TRUE(fs::exists(dir / ".rank-0.step-4.bin.tmp-q1w2e3"));  // a rank's, removed by its rank
  EXPECT_TRUE(fs::exists(dir / "header.json"));
  EXPECT_TRUE(fs::exists(rank_file(dir, 0, 6)));
  EXPECT_TRUE(fs::exists(dir / "notes.txt"));
  EXPECT_EQ(read_header(dir)["ranks"], 1);
  EXPECT_NO_THROW(read_rank_state(dir, 0, 6));
  remove_rank_states(dir, 0, 6);
  EXPECT_FALSE(fs::exists(dir / ".rank-0.step-4.bin.tmp-q1w2e3"));
  EXPECT_TRUE(fs::exists(rank_file(dir, 0, 6)));
}

// A format-1 file: the same fields after the magic "DTBCKPT1", no checksum. Offsets in its errors count from the
// file's first byte (the length of the weights sits at byte 16).
TEST_F(CheckpointFiles, ReadsFormatOneAndCountsOffsetsFromTheFileStart) {
  write_rank_state(dir, 0, sample());
  std::string v1 = bytes();
  v1.resize(v1.size() - 4);  // no CRC
  v1[7] = '1';
  put(v1);
  EXPECT_EQ(read_rank_state(dir, 0, 6).params, sample().params);
  put(v1.substr(0, 18));
  EXPECT_EQ(error(), rank_file(dir, 0, 6).string() +
                         ": truncated checkpoint at byte 16 reading the weights (8 bytes expected, 2 left)");
  v1 += "zz";
  put(v1);
  EXPECT_NE(error().find("2 bytes after the extra state"), std::string::npos) << error();
}

TEST_F(CheckpointFiles, HeaderOfTheWrongShapeNamesTheFileAndTheKey) {
  const std::string where = (dir / "header.json").string() + ": damaged checkpoint header: ";
  EXPECT_EQ(header_error("{}"), where + "/config: expected an object");
  EXPECT_EQ(header_error("[]"), where + "expected an object");
  EXPECT_EQ(header_error(R"({"config": {}, "state": {}, "ranks": "1"})"), where + "/ranks: expected a rank count, got \"1\"");
  EXPECT_EQ(header_error(R"({"config": {}, "state": {}, "ranks": 1.5})"), where + "/ranks: expected a rank count, got 1.5");
  EXPECT_EQ(header_error(R"({"config": {}, "state": {}, "ranks": 2})"), "no error");
  fs::remove(dir / "header.json");
  fs::create_symlink("header.json", dir / "header.json");  // a loop
  EXPECT_NE(header_error("").find("cannot examine the checkpoint header"), std::string::npos);
}

}  // namespace
