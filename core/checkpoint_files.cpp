#include "core/checkpoint_files.hpp"

#include <algorithm>
#include <cstring>

#include "core/atomic_file.hpp"
#include "core/crc32.hpp"
#include "core/error.hpp"
#include "core/node_layout.hpp"
#include "core/regular_file.hpp"

namespace dtbench {
namespace fs = std::filesystem;
namespace {

// Format 2 ends with a CRC-32 (zlib's) of every byte before it, so a flipped bit in the weights is an error
// rather than a resumed run that silently trains from other weights. Format 1 (no checksum) is still read.
constexpr char kMagic[8] = {'D', 'T', 'B', 'C', 'K', 'P', 'T', '2'};
constexpr char kMagicV1[8] = {'D', 'T', 'B', 'C', 'K', 'P', 'T', '1'};


template <class T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_bytes(std::string& out, const void* p, uint64_t bytes) {
  put(out, bytes);
  out.append(static_cast<const char*>(p), bytes);
}

// Reads the fields of a rank file from byte `begin` up to byte `end`; offsets in errors are the file's.
class Reader {
 public:
  Reader(const std::string& data, size_t begin, size_t end, std::string file)
      : data_(data), end_(end), file_(std::move(file)), pos_(begin) {}
  template <class T>
  T get(const char* what) {
    T v;
    need(sizeof v, what);
    std::memcpy(&v, data_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  size_t position() const { return pos_; }
  std::string bytes(const char* what) {
    uint64_t n = get<uint64_t>(what);
    need(n, what);
    std::string s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::vector<float> floats(const char* what) {
    const size_t at = pos_;
    const std::string b = bytes(what);
    if (b.size() % sizeof(float) != 0)
      throw BadInput(file_ + ": damaged checkpoint at byte " + std::to_string(at) + ": " + what + " hold " +
                     std::to_string(b.size()) + " bytes, not a whole number of floats");
    std::vector<float> v(b.size() / sizeof(float));
    if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());  // memcpy may not be given an empty vector's null
    return v;
  }
  void need(uint64_t n, const char* what) {
    if (end_ - pos_ < n)
      throw BadInput(file_ + ": truncated checkpoint at byte " + std::to_string(pos_) + " reading " + what + " (" +
                     std::to_string(n) + " bytes expected, " + std::to_string(end_ - pos_) + " left)");
  }
  void at_end() const {
    if (pos_ != end_)
      throw BadInput(file_ + ": damaged checkpoint: " + std::to_string(end_ - pos_) + " bytes after the extra state at byte " +
                     std::to_string(pos_));
  }

 private:
  const std::string& data_;
  size_t end_;
  std::string file_;
  size_t pos_;
};


std::string rank_prefix(int rank) { return "rank-" + std::to_string(rank) + ".step-"; }

}  // namespace

fs::path rank_file(const fs::path& dir, int rank, int64_t step) {
  return dir / (rank_prefix(rank) + std::to_string(step) + ".bin");
}

uint32_t write_rank_state(const fs::path& dir, int rank, const RankState& s) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw RunFailed(dir.string() + ": cannot create the checkpoint folder: " + ec.message());
  std::string out(kMagic, sizeof kMagic);
  put(out, s.step);
  put_bytes(out, s.params.data(), s.params.size() * sizeof(float));
  put_bytes(out, s.buffers.data(), s.buffers.size() * sizeof(float));
  put_bytes(out, s.optimizer.data(), s.optimizer.size());
  // The rank is written inside the checksummed bytes: files of two ranks swapped by hand (one model-parallel shard's
  // size is another's) are then told apart, as a renamed step is.
  Json extra_state = s.extra;
  if (extra_state.is_object()) extra_state["rank"] = rank;
  std::string extra = extra_state.dump();
  put_bytes(out, extra.data(), extra.size());
  const uint32_t crc = crc32_of(out.data(), out.size());
  put(out, crc);
  write_file_atomic(rank_file(dir, rank, s.step), out, false);
  return crc;
}

void remove_rank_states(const fs::path& dir, int rank, int64_t keep) {
  const std::string prefix = rank_prefix(rank), kept = rank_file(dir, rank, keep).filename().string();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // Also the temporary files (".<name>.tmp-XXXXXX", core/atomic_file) of a write that a killed rank left.
    const bool temporary = name.rfind("." + prefix, 0) == 0 && name.find(".tmp-") != std::string::npos;
    if ((name.rfind(prefix, 0) == 0 && name != kept) || temporary) fs::remove(entry.path(), ec);
  }
}

RankState read_rank_state(const fs::path& dir, int rank, int64_t expect_step) {
  fs::path file = rank_file(dir, rank, expect_step);
  if (!input_exists(file, "checkpoint file"))
    throw BadInput(file.string() + ": checkpoint file of rank " + std::to_string(rank) + " is missing");
  // Weights, buffers and optimizer state: a few times the model, far below this bound.
  const std::string data = read_regular_file(file, uint64_t{64} << 30, "checkpoint file");
  const bool v2 = data.size() >= sizeof kMagic && std::memcmp(data.data(), kMagic, sizeof kMagic) == 0;
  const bool v1 = data.size() >= sizeof kMagicV1 && std::memcmp(data.data(), kMagicV1, sizeof kMagicV1) == 0;
  if (!v1 && !v2) throw BadInput(file.string() + ": not a dtbench checkpoint (wrong magic number at byte 0)");
  size_t end = data.size();
  if (v2) {
    if (data.size() < sizeof kMagic + sizeof(uint32_t))
      throw BadInput(file.string() + ": truncated checkpoint: " + std::to_string(data.size()) + " bytes");
    end -= sizeof(uint32_t);
    uint32_t stored = 0;
    std::memcpy(&stored, data.data() + end, sizeof stored);
    const uint32_t computed = crc32_of(data.data(), end);
    if (stored != computed)
      throw BadInput(file.string() + ": damaged checkpoint: its CRC-32 (at byte " + std::to_string(end) +
                     ") does not match its contents, or it was cut short");
  }
  Reader r(data, sizeof kMagic, end, file.string());
  RankState s;
  if (v2) std::memcpy(&s.crc, data.data() + end, sizeof s.crc), s.has_crc = true;
  s.step = r.get<int64_t>("the step");
  if (s.step != expect_step)
    throw BadInput(file.string() + ": rank file is from step " + std::to_string(s.step) + " but the header says " +
                   std::to_string(expect_step) + " (a stale or mixed checkpoint)");
  s.params = r.floats("the weights");
  s.buffers = r.floats("the batch-norm buffers");  // none in a model without batch norm
  s.optimizer_offset = r.position() + sizeof(uint64_t);  // past the section's byte count
  std::string o = r.bytes("the optimizer state");
  s.optimizer.assign(o.begin(), o.end());
  std::string e = r.bytes("the extra state");
  r.at_end();
  try {
    s.extra = Json::parse(e);
  } catch (const Json::parse_error&) {
    throw BadInput(file.string() + ": damaged extra state");
  }
  if (!s.extra.is_object() || !s.extra.contains("schedule"))
    throw BadInput(file.string() + ": damaged extra state (expected an object with the schedule's state)");
  // Files written before the rank was recorded have none: they are read as before.
  if (s.extra.contains("rank") && s.extra["rank"] != Json(rank))
    throw BadInput(file.string() + ": rank file holds the state of rank " + s.extra["rank"].dump() + ", not of rank " +
                   std::to_string(rank) + " (a mixed checkpoint: rank files renamed?)");
  s.extra.erase("rank");
  return s;
}

namespace {

bool is_hex8(const Json& v) {
  return v.is_string() && v.get<std::string>().size() == 8 &&
         v.get<std::string>().find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

void write_header(const fs::path& dir, const Json& header) {
  Json with = header;
  with.erase("crc32");
  const std::string crc = crc32_hex(with.dump());  // of the rest, as read_header checks it
  with["crc32"] = crc;
  write_json_atomic(dir / "header.json", with, false);
}

void check_rank_file(const fs::path& dir, const Json& header, int rank, const RankState& s) {
  if (!header.contains("rank_crc32")) return;  // a header from before it listed them
  const std::string listed = header["rank_crc32"][size_t(rank)].get<std::string>();
  if (s.has_crc && crc32_hex(s.crc) == listed) return;
  throw BadInput(rank_file(dir, rank, s.step).string() + ": not the rank file this checkpoint's header.json lists " +
                 "for rank " + std::to_string(rank) + " (its CRC-32 is " + crc32_hex(s.crc) + ", the header's " + listed +
                 "): a mixed checkpoint (a rank file copied from another run or checkpoint?)");
}

void remove_header_temporaries(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code rm;
    if (name.rfind(".header.json.tmp-", 0) == 0) fs::remove(it->path(), rm);
  }
}

void check_thread_counts(const Json& v, const std::string& at) {
  const auto count = [](const Json& n) { return n.is_number_integer() ? n.get<int64_t>() : int64_t{0}; };
  if (!v.is_array() || v.size() != 2 || count(v[0]) < 1 || count(v[1]) < count(v[0]) || count(v[1]) > (1 << 20))
    throw BadInput(at + ": expected [fewest, most] thread counts with 1 <= fewest <= most <= 2^20, got " +
                   v.dump().substr(0, 40));
}

void check_node_layout(const Json& v, const std::string& at, int64_t ranks) {
  bool ok = v.is_array() && !v.empty() && (ranks <= 0 || v.size() == size_t(ranks)) && v.size() <= (size_t{1} << 24) &&
            std::all_of(v.begin(), v.end(), [](const Json& n) { return n.is_number_integer(); });
  if (ok) ok = !misnumbered_node(v.get<std::vector<int64_t>>());
  if (!ok)
    throw BadInput(at + ": expected each rank's node, numbered from 0 in the order of their lowest ranks" +
                   (ranks > 0 ? " (" + std::to_string(ranks) + " ranks)" : std::string()) + ", got " +
                   v.dump().substr(0, 40));
}

Json read_header(const fs::path& dir) {
  fs::path file = dir / "header.json";
  if (!input_exists(file, "checkpoint header")) return Json();
  const std::string text = read_regular_file(file, uint64_t{64} << 20, "checkpoint header");
  // Strict (no duplicate keys); a UTF-8 byte order mark is skipped, as in every JSON file dtbench reads (it changes
  // nothing read, and the CRC-32 is of the parsed content).
  Json header = parse_json(text, file.string());
  const std::string where = file.string() + ": damaged checkpoint header: ";
  if (!header.is_object()) throw BadInput(where + "expected an object");
  // Its CRC-32 over the rest (a header edited or damaged where it still parsed went into the resumed run's curve and
  // noise scale; a hunt). A header written before it had one has none.
  if (header.contains("crc32")) {
    const Json crc = header["crc32"];
    header.erase("crc32");
    if (!is_hex8(crc)) throw BadInput(where + "/crc32: expected 8 hex digits, got " + crc.dump().substr(0, 40));
    if (crc32_hex(header.dump()) != crc.get<std::string>())
      throw BadInput(file.string() + ": damaged checkpoint header: its CRC-32 (/crc32) does not match its contents " +
                     "(edited or damaged since it was written)");
  }
  for (const char* key : {"config", "state"})
    if (!header.contains(key) || !header[key].is_object())
      throw BadInput(where + "/" + key + ": expected an object");
  const Json& ranks = header.contains("ranks") ? header["ranks"] : Json();
  if (!ranks.is_number_integer() || ranks.get<int64_t>() < 1 || ranks.get<int64_t>() > (int64_t{1} << 24))
    throw BadInput(where + "/ranks: expected a rank count, got " + ranks.dump());
  // The build and the thread counts that wrote it go into a resumed run's record (found by a hunt: 5 and
  // ["a", -1, {}] were taken as they were).
  if (header.contains("dtbench") && !header["dtbench"].is_string())
    throw BadInput(where + "/dtbench: expected the build's name (a string), got " + header["dtbench"].dump().substr(0, 40));
  if (header.contains("threads")) check_thread_counts(header["threads"], where + "/threads");
  if (header.contains("data") && !header["data"].is_object())  // the shape of the data it was written on
    throw BadInput(where + "/data: expected an object, got " + header["data"].dump().substr(0, 40));
  if (header.contains("nodes")) check_node_layout(header["nodes"], where + "/nodes", ranks.get<int64_t>());
  if (header.contains("rank_crc32")) {
    const Json& crcs = header["rank_crc32"];
    if (!crcs.is_array() || crcs.size() != size_t(ranks.get<int64_t>()) ||
        !std::all_of(crcs.begin(), crcs.end(), is_hex8))
      throw BadInput(where + "/rank_crc32: expected one CRC-32 (8 hex digits) per rank, got " + crcs.dump().substr(0, 60));
  }
  return header;
}

void verify_checkpoint(const std::filesystem::path& dir) {
  const Json header = read_header(dir);
  const std::string file = (dir / "header.json").string();
  if (header.is_null()) throw BadInput(file + ": missing (no checkpoint in " + dir.string() + ")");
  const Json& step = header["state"].contains("step") ? header["state"]["step"] : Json();
  if (!step.is_number_integer() || step.get<int64_t>() < 0)
    throw BadInput(file + ": /state/step: expected the step to continue from, got " + step.dump().substr(0, 40));
  for (int r = 0; r < header["ranks"].get<int>(); ++r)
    check_rank_file(dir, header, r, read_rank_state(dir, r, step.get<int64_t>()));
}

}  // namespace dtbench
