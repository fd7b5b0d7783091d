// Hostile JSON input: every class is exit 2 (BadInput) with the file, position or JSON pointer, never a crash,
// a hang, an unbounded read or a silently chosen value.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <unistd.h>

#include "config/run_config.hpp"
#include "core/error.hpp"
#include "core/json.hpp"

namespace fs = std::filesystem;
using dtbench::BadInput;
using dtbench::Json;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

class JsonInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("dtbench-json-input-" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string file(const std::string& name, const std::string& text) {
    const fs::path p = dir / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  fs::path dir;
};

TEST_F(JsonInput, DeepNestingIsRefusedBeforeParsing) {
  // 100,000 nested arrays overflowed the stack of the recursive parser (a segmentation fault).
  const std::string deep = "{\"model\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const std::string path = file("deep.json", deep);
  EXPECT_EQ(error_of([&] { dtbench::read_json_file(path, "config file"); }),
            path + ":1:74: nested deeper than 64 levels (byte 73)");  // the 65th bracket: 1 brace + 64 arrays
  // Brackets inside strings do not count.
  EXPECT_EQ(dtbench::parse_json("{\"name\": \"" + std::string(1000, '[') + "\"}", "x")["name"].get<std::string>().size(),
            1000u);
}

TEST_F(JsonInput, DuplicateKeysAreNamed) {
  EXPECT_EQ(error_of([] { dtbench::parse_json(R"({"seed": 1, "seed": 2})", "c.json"); }),
            "c.json: /seed: the key appears twice in one object (which one is meant?)");
  EXPECT_EQ(error_of([] { dtbench::parse_json(R"({"d": [{"a": 1}, {"b": 2, "b": 3}]})", "c.json"); }),
            "c.json: /d/1/b: the key appears twice in one object (which one is meant?)");
  // The same key in different objects is fine.
  EXPECT_NO_THROW(dtbench::parse_json(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 3}, {"x": 4}]})", "c.json"));
  // Through --set too.
  EXPECT_EQ(error_of([] { dtbench::config::load("", {R"(model={"arch":"mlp","arch":"resnet8"})"}, 0); }),
            "--set model: /arch: the key appears twice in one object (which one is meant?)");
}

TEST_F(JsonInput, NumbersBeyondADoubleAreNamed) {
  // The parser throws out_of_range, not parse_error, for a number beyond a double's range: it escaped as an
  // internal error (exit 1). Found by fuzz/sweep_spec and fuzz/run_record; their inputs, byte for byte.
  const std::string spec = R"({"name": "with base file", "base": "based.json", "axes": 1e999{"optie": "with base file", "base": "based.json", "axes": {"optimiz+++++++++++++++++++++++++++++++++++++miz+++++++++++++++sed.json", "axes": {"optie": "with base file", "base": "based.json", "axes": {"optimiz+++++++++++++++++++++++++++++++++++++miz+++++++++++++++++++++++++++++++++++++++++++++++er.lr"? [0.1, 0.2]}})";
  EXPECT_EQ(error_of([&] { dtbench::parse_json(spec, "spec.json"); }),
            "spec.json:1:58: the number 1e999 is beyond a double's range (byte 57)");
  const std::string record = R"({"schema_version": 99, "kind": "dtbench-run-record", "name": "p00-epochs0-global12estero8-micro_batches1-s1", "status": "completed", "status_detaminbytesil": "", "con&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&pointer&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&fig": {"name": "p00-epochs0-global128-micro_batches1-s1", "sed" :59e55854677843, "total": 0.0033451542897629635}, "throughput": {"images_per_second": 3826points9959247, "bytes_communicated_per_step": 0.0}, "curve": [{"{
  "scheka_version": 1,
  "kind": "dtbench-run-rec_seconds": 2.8808316pochs32999610-gl6)";
  EXPECT_EQ(error_of([&] { dtbench::parse_json(record, "r.json"); }),
            "r.json:1:329: the number 59e55854677843 is beyond a double's range (byte 328)");
  // Large integers, tiny and ordinary numbers are numbers.
  EXPECT_EQ(dtbench::parse_json("[99999999999999999999, 1e-400, -0.5e+3]", "x"),
            Json::parse("[1e20, 0, -500]"));
}

TEST_F(JsonInput, BytesAfterANulAreNotIgnored) {
  const std::string path = file("nul.json", std::string("{\"seed\": 1}\0{\"seed\": 2}", 23));
  EXPECT_EQ(error_of([&] { dtbench::read_json_file(path, "config file"); }),
            path + ":1:12: a NUL byte (byte 11); JSON text has none");
}

TEST_F(JsonInput, OnlyRegularFilesAreRead) {
  const std::string fifo = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_EQ(error_of([&] { dtbench::read_json_file(fifo, "config file"); }),
            fifo + ": config file is not a regular file (a FIFO, device or socket)");
  EXPECT_EQ(error_of([&] { dtbench::read_json_file("/dev/zero", "config file"); }),
            "/dev/zero: config file is not a regular file (a FIFO, device or socket)");
}

TEST_F(JsonInput, SetValuesMustBeUtf8) {
  EXPECT_EQ(error_of([] { dtbench::config::load("", {"name=ok\xff"}, 0); }),
            "--set name: the value is not valid UTF-8 (byte 2)");
  EXPECT_EQ(dtbench::first_invalid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::string::npos);
  EXPECT_EQ(dtbench::first_invalid_utf8("\xc0\xaf"), 0u);      // overlong '/'
  EXPECT_EQ(dtbench::first_invalid_utf8("a\xed\xa0\x80"), 1u);  // a UTF-16 surrogate
  EXPECT_EQ(dtbench::first_invalid_utf8("ab\xe2\x82"), 2u);     // cut short
}

TEST_F(JsonInput, ErrorMessagesAreCapped) {
  // A 5 MB bad value: the message keeps its beginning (the key) and end, and says what it left out.
  const std::string name(5'000'000, 'x');
  const std::string msg = error_of([&] { dtbench::config::load("", {"optimizer.name=" + name}, 0); });
  ASSERT_FALSE(msg.empty());
  EXPECT_LE(msg.size(), dtbench::kMaxMessageBytes + 100);
  EXPECT_EQ(msg.rfind("/optimizer/name", 0), 0u) << msg.substr(0, 100);
  EXPECT_NE(msg.find("bytes left out"), std::string::npos);
}

}  // namespace
