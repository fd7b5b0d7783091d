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
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/json_fields.hpp"

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
            "--set model (the value of /model): /arch: the key appears twice in one object (which one is meant?)");
}

TEST_F(JsonInput, NumbersBeyondADoubleAreNamed) {
  // The parser throws out_of_range, not parse_error, for a number beyond a double's range: it escaped as an
  // internal error (exit 1). Found by fuzz/sweep_spec and fuzz/run_record; their inputs, byte for byte.
  const std::string spec = R"({"name": "with base file", "base": "based.json", "axes": 1e999{"optie": "with base file", "base": "based.json", "axes": {"optimiz+++++++++++++++++++++++++++++++++++++miz+++++++++++++++sed.json", "axes": {"optie": "with base file", "base": "based.json", "axes": {"optimiz+++++++++++++++++++++++++++++++++++++miz+++++++++++++++++++++++++++++++++++++++++++++++er.lr"? [0.1, 0.2]}})";
  EXPECT_EQ(error_of([&] { dtbench::parse_json(spec, "spec.json"); }),
            "spec.json:1:58: the number 1e999 is beyond the range of a double (byte 57)");
  const std::string record = R"({"schema_version": 99, "kind": "dtbench-run-record", "name": "p00-epochs0-global12estero8-micro_batches1-s1", "status": "completed", "status_detaminbytesil": "", "con&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&pointer&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&fig": {"name": "p00-epochs0-global128-micro_batches1-s1", "sed" :59e55854677843, "total": 0.0033451542897629635}, "throughput": {"images_per_second": 3826points9959247, "bytes_communicated_per_step": 0.0}, "curve": [{"{
  "scheka_version": 1,
  "kind": "dtbench-run-rec_seconds": 2.8808316pochs32999610-gl6)";
  EXPECT_EQ(error_of([&] { dtbench::parse_json(record, "r.json"); }),
            "r.json:1:329: the number 59e55854677843 is beyond the range of a double (byte 328)");
  // Large integers and ordinary numbers are numbers (tiny ones are not: Numbers.NumbersBeyondADoubleAreNamedWhereTheyStand).
  EXPECT_EQ(dtbench::parse_json("[99999999999999999999, 1e-300, -0.5e+3]", "x"),
            Json::parse("[1e20, 1e-300, -500]"));
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
  // It names the --set, shortened, then the key.
  EXPECT_EQ(msg.rfind("--set optimizer.name=" + std::string(40, 'x') + "... (5000000 bytes): /optimizer/name", 0), 0u)
      << msg.substr(0, 200);
  EXPECT_NE(msg.find("bytes left out"), std::string::npos);
  // A NUL does not end the message: it is written as in JSON text.
  EXPECT_STREQ(dtbench::BadInput(std::string("/a\0b: unknown key", 17)).what(), "/a\\u0000b: unknown key");
}

// ---- numbers and names at the edges: a number no double holds, an integer setting beyond 2^53, an
// unsigned value beyond int64_t, a run name the file system cannot hold or that leaves the output folder, and
// an output file that cannot be written.

std::string resolve_error(const Json& user) {
  return error_of([&] { dtbench::config::resolve(user, 0); });
}

TEST(Numbers, NumbersBeyondADoubleAreNamedWhereTheyStand) {
  // nlohmann's parser throws a bare out_of_range for these (an internal error, exit 1, before).
  EXPECT_EQ(error_of([] { dtbench::parse_json("{\"seed\": 1e999}", "c.json"); }),
            "c.json:1:10: the number 1e999 is beyond the range of a double (byte 9)");
  EXPECT_EQ(error_of([] { dtbench::parse_json("{\"a\": [1,\n -2E+400]}", "c.json"); }),
            "c.json:2:2: the number -2E+400 is beyond the range of a double (byte 11)");
  // The largest and the smallest normal double are numbers, and so is 0 in any spelling; digits inside strings
  // are text.
  const dtbench::Json edges = dtbench::parse_json("[1.7976931348623157e308, 2.2250738585072014e-308, 0e5, -0.0, 0.000e-999]", "x");
  EXPECT_EQ(edges[1].get<double>(), 2.2250738585072014e-308);
  EXPECT_EQ(edges[4].get<double>(), 0.0);
  // A number nearer 0 than that was read as 0 (1e-999) or as a denormal (1e-320) that `train` flushes to 0 while
  // `config` and `sweep` kept it (a hunt's finding: the sweep then refused its own run's record).
  EXPECT_EQ(error_of([] { dtbench::parse_json("[1e-999]", "c.json"); }),
            "c.json:1:2: the number 1e-999 is nearer 0 than the smallest normal double (2.2e-308): it would be read as "
            "0 or a denormal (byte 1)");
  EXPECT_EQ(error_of([] { dtbench::parse_json("{\"w\": -1e-320}", "c.json"); }),
            "c.json:1:7: the number -1e-320 is nearer 0 than the smallest normal double (2.2e-308): it would be read as "
            "0 or a denormal (byte 6)");
  EXPECT_EQ(dtbench::parse_json("{\"n\": \"1e999\"}", "x")["n"], "1e999");
  // A long number is cut in the message.
  EXPECT_EQ(error_of([] { dtbench::parse_json("[9" + std::string(400, '9') + "]", "c.json"); }),
            "c.json:1:2: the number " + std::string(37, '9') + "... is beyond the range of a double (byte 1)");
}

TEST(Numbers, InvalidUtf8IsNamedAtItsByte) {
  EXPECT_EQ(error_of([] { dtbench::parse_json("{\"name\": \"a\xff\"}", "c.json"); }),
            "c.json:1:12: not valid UTF-8 (byte 11); JSON text is UTF-8");
}

TEST(Numbers, SettingsMeanWhatTheySayInSinglePrecision) {
  // The model reads dropout and label smoothing as float32 with denormals flushed to zero: 0.99999999 passed [0, 1)
  // and was 1 to the model, which refused it without the key (a hunt); 1e-39 would act as 0.
  EXPECT_EQ(resolve_error({{"model", {{"dropout", 0.99999999}}}}),
            "/model/dropout: expected a number in [0, 1), got 0.99999999, which rounds to a float32 outside that range "
            "(it is read as float32, denormals flushed to zero)");
  EXPECT_EQ(resolve_error({{"model", {{"label_smoothing", 1e-39}}}}).substr(0, 114),
            "/model/label_smoothing: expected a number in [0, 1), got 1e-39, which is nearer 0 than the smallest "
            "normal float32");
  // Where float32 keeps the value in range, it is taken: the largest float below 1, and 0 itself.
  EXPECT_EQ(resolve_error({{"model", {{"dropout", 0.99999994}, {"label_smoothing", 0}}}}), "");
  // The optimizers' kernels cast their settings to float32: a learning rate of 1e-39 acted as 0, one of 1e39 as
  // infinity, and Adam's beta2 of 0.99999999 is 1.0 there. Settings of other sections (a warmup in epochs) are not.
  EXPECT_EQ(resolve_error({{"optimizer", {{"name", "sgd"}, {"lr", 1e-39}}}}).substr(0, 99),
            "/optimizer/lr: expected a number > 0, got 1e-39, which is nearer 0 than the smallest normal float32");
  EXPECT_EQ(resolve_error({{"optimizer", {{"name", "sgd"}, {"lr", 1e39}}}}).substr(0, 85),
            "/optimizer/lr: expected a number > 0, got 1e+39, which is beyond the range of float32");
  EXPECT_EQ(resolve_error({{"optimizer", {{"name", "adam"}, {"beta2", 0.99999999}}}}).substr(0, 107),
            "/optimizer/beta2: expected a number in [0, 1), got 0.99999999, which rounds to a float32 outside that range");
  EXPECT_EQ(resolve_error({{"optimizer", {{"name", "adam"}, {"beta2", 0.9999999}}}}), "");
  EXPECT_EQ(resolve_error({{"schedule", {{"warmup", {{"epochs", 1e-39}}}}}}), "");
}

TEST(Numbers, IntegerSettingsStopAt2To53) {
  // 1e300 was cast to int64_t (undefined; it printed as -9223372036854775808).
  EXPECT_EQ(resolve_error({{"schedule", {{"name", "step"}, {"step_size", 1e300}}}}),
            "/schedule/step_size: expected an integer >= 1 and <= 2^53, got 1e+300");
  // 99999999999999999999 parses as a double (above 2^64); 18446744073709551615 as an unsigned integer.
  EXPECT_EQ(resolve_error(dtbench::parse_json(R"({"schedule": {"warmup": {"steps": 99999999999999999999}}})", "x")),
            "/schedule/warmup/steps: expected an integer >= 0 and <= 2^53, got 1e+20");
  EXPECT_EQ(resolve_error(dtbench::parse_json(R"({"seed": 18446744073709551615})", "x")),
            "/seed: expected an integer in [0, 9007199254740991], got 18446744073709551615");
  EXPECT_EQ(resolve_error({{"schedule", {{"name", "multistep"}, {"milestones", {30, 1e300}}}}}),
            "/schedule/milestones/1: expected an integer >= 0 and <= 2^53, got 1e+300");
  // 2^53 itself is exact, and kept exactly.
  const Json c = dtbench::config::resolve({{"schedule", {{"name", "step"}, {"step_size", 9007199254740992.0}}}}, 0);
  EXPECT_EQ(c["schedule"]["step_size"].get<int64_t>(), int64_t{1} << 53);
}

TEST(Numbers, RecordFieldsBeyondInt64AreNamed) {
  const Json doc = dtbench::parse_json(R"({"ranks": 18446744073709551615, "wrong": -1})", "x");
  const dtbench::JsonFields f(doc, "");
  EXPECT_EQ(error_of([&] { f.integer("ranks"); }), "/ranks: expected an integer below 2^63, got 18446744073709551615");
  EXPECT_EQ(error_of([&] { f.nonneg_number("wrong"); }), "/wrong: expected a number >= 0, got -1");
}

TEST(Numbers, RunNamesMustBeFileNamesThatFit) {
  // The longest file beside the record is ".<name>.weights.tmp-XXXXXX": 20 bytes more than the name.
  EXPECT_EQ(resolve_error({{"name", std::string(235, 'n')}}), "");
  EXPECT_EQ(resolve_error({{"name", std::string(236, 'n')}}),
            "/name: 236 bytes is too long for the run's file names: at most 235 (the longest file beside the record, "
            "\".<name>.weights.tmp-XXXXXX\", must fit the file system's 255 bytes)");
  EXPECT_EQ(resolve_error({{"name", "../escape"}}),
            "/name: a file name, not a path (a '/' would put the run's files outside /output/dir), got \"../escape\"");
  EXPECT_EQ(resolve_error({{"name", ".."}}), "/name: \"..\" names a folder, not a run");
  EXPECT_EQ(resolve_error({{"name", std::string("a\0b", 3)}}), "/name: a NUL character cannot be part of a file name");
  // Counted in bytes: 118 two-byte characters are 236 bytes.
  std::string wide;
  for (int i = 0; i < 118; ++i) wide += "\xc3\xa9";
  EXPECT_EQ(resolve_error({{"name", wide}}).rfind("/name: 236 bytes is too long", 0), 0u);
  // With /output/record given, the record names the files, and the name is only text.
  EXPECT_EQ(resolve_error({{"name", std::string(300, 'n')}, {"output", {{"record", "r.json"}}}}), "");
  EXPECT_EQ(resolve_error({{"output", {{"record", "sub/r.json"}}}}),
            "/output/record: a file name, not a path (a '/' would put the run's files outside /output/dir), got "
            "\"sub/r.json\"");
  EXPECT_EQ(resolve_error({{"output", {{"record", std::string(235, 'r') + ".json"}}}}), "");
  EXPECT_EQ(resolve_error({{"output", {{"record", std::string(236, 'r')}}}}).rfind("/output/record: 236 bytes", 0), 0u);
}

TEST(Numbers, OutputFilesAreCheckedWithoutCreatingAnything) {
  const fs::path dir = fs::temp_directory_path() / ("dtbench-numbers-" + std::to_string(::getpid()));
  fs::create_directories(dir / "sub");
  std::ofstream(dir / "file") << "x";
  EXPECT_EQ(error_of([&] { dtbench::check_output_file(dir / "sub", "--json"); }),
            "--json: " + (dir / "sub").string() + " is a folder, not a file");
  EXPECT_EQ(error_of([&] { dtbench::check_output_file(dir.string() + "/new/", "--json"); }),
            "--json: " + dir.string() + "/new/ ends with a '/', the name of a folder; give a file's name");
  EXPECT_EQ(error_of([&] { dtbench::check_output_file(dir / "missing" / "x.json", "--json"); }),
            "--json: folder " + (dir / "missing").string() + " does not exist");
  EXPECT_EQ(error_of([&] { dtbench::check_output_file(dir / "file" / "x.json", "--json"); }),
            "--json: " + (dir / "file").string() + " is not a folder");
  // /proc refuses new files even to root, whose access(2) says yes to anything; its ENOENT is not read as a missing
  // folder (a file of /proc, which exists, as well).
  EXPECT_EQ(error_of([&] { dtbench::check_output_file("/proc/dtbench.json", "--json"); }),
            "--json: folder /proc is not writable: its file system creates no files (No such file or directory)");
  EXPECT_EQ(error_of([&] { dtbench::check_output_file("/proc/version", "--json"); }),
            "--json: folder /proc is not writable: its file system creates no files (No such file or directory)");
  EXPECT_EQ(error_of([&] { dtbench::check_output_file("/dev/null", "--json"); }),
            "--json: /dev/null is not a regular file (a device, a pipe or a socket)");
  EXPECT_EQ(error_of([&] { dtbench::check_output_file(dir / "x.json", "--json"); }), "");
  EXPECT_FALSE(fs::exists(dir / "missing"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2);  // sub and file only
  fs::remove_all(dir);
}

// The pointer names a value of the documents: an array longer in the second was named ".../-" (JSON Patch's append),
// which a user cannot look up; a checkpoint whose /parallel/pipeline_cut had one stage less said so (found by a hunt).
TEST(FirstDifference, NamesAValueOfTheDocuments) {
  const auto parse = [](const char* t) { return Json::parse(t); };
  EXPECT_EQ(dtbench::first_difference(parse(R"({"p": {"cut": [1]}})"), parse(R"({"p": {"cut": [1, 2]}})")), "/p/cut");
  EXPECT_EQ(dtbench::first_difference(parse(R"({"p": {"cut": [1, 2]}})"), parse(R"({"p": {"cut": [1]}})")), "/p/cut");
  EXPECT_EQ(dtbench::first_difference(parse(R"({"p": {"cut": [1, 2, 3]}})"), parse(R"({"p": {"cut": [1]}})")), "/p/cut");
  EXPECT_EQ(dtbench::first_difference(parse(R"({"p": {"-": 1}})"), parse(R"({"p": {"-": 2}})")), "/p/-");  // a key
  EXPECT_EQ(dtbench::first_difference(parse(R"({"p": [{"a": 1}]})"), parse(R"({"p": [{"a": 2}]})")), "/p/0/a");
  EXPECT_EQ(dtbench::first_difference(parse(R"({"p": {"cut": [1, 3]}})"), parse(R"({"p": {"cut": [1, 2]}})")), "/p/cut/1");
  EXPECT_EQ(dtbench::first_difference(parse(R"({"a": 1})"), parse(R"({"a": 1})")), "");
}

}  // namespace
