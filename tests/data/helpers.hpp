// Shared test helpers: a per-test temporary folder, writers for small IDX and CIFAR files (plain and
// gzip, written with zlib's deflate, independent of the reader's inflate path), and catching BadInput.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace dtbench::data::test {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = fs::temp_directory_path() /
          ("dtbench_data_" + std::to_string(getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

inline void write_file(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline Bytes read_whole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// One gzip member (windowBits 16 + 15 makes deflate write the gzip header and trailer).
inline Bytes gzip(const Bytes& data) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  Bytes out(deflateBound(&zs, data.size()));
  zs.next_in = const_cast<Bytef*>(data.data());
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

inline void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

// IDX images: magic 0x00000803, n, rows, cols, then the pixels.
inline Bytes idx_images(uint32_t n, uint32_t rows, uint32_t cols, const Bytes& pixels, uint32_t magic = 0x803) {
  Bytes b;
  put_be32(b, magic);
  put_be32(b, n);
  put_be32(b, rows);
  put_be32(b, cols);
  b.insert(b.end(), pixels.begin(), pixels.end());
  return b;
}

// IDX labels: magic 0x00000801, n, then the labels.
inline Bytes idx_labels(uint32_t n, const Bytes& labels, uint32_t magic = 0x801) {
  Bytes b;
  put_be32(b, magic);
  put_be32(b, n);
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}

// n CIFAR records; image i has pixel j = (i * 7 + j) mod 256 and the given labels.
inline Bytes cifar_records(const std::vector<std::vector<uint8_t>>& labels_per_record) {
  Bytes b;
  for (size_t i = 0; i < labels_per_record.size(); ++i) {
    b.insert(b.end(), labels_per_record[i].begin(), labels_per_record[i].end());
    for (size_t j = 0; j < 3072; ++j) b.push_back(static_cast<uint8_t>((i * 7 + j) % 256));
  }
  return b;
}

// The message of the BadInput that f throws (and a test failure if it throws nothing or something else).
template <class F>
std::string bad_input(F&& f) {
  try {
    f();
  } catch (const BadInput& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected BadInput, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected BadInput, nothing was thrown";
  return "";
}

}  // namespace dtbench::data::test
