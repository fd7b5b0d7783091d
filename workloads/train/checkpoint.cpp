#include "workloads/train/checkpoint.hpp"

#include <cstring>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/regular_file.hpp"

namespace dtbench {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'D', 'T', 'B', 'C', 'K', 'P', 'T', '1'};

template <class T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_bytes(std::string& out, const void* p, uint64_t bytes) {
  put(out, bytes);
  out.append(static_cast<const char*>(p), bytes);
}

class Reader {
 public:
  Reader(std::string data, std::string file) : data_(std::move(data)), file_(std::move(file)) {}
  template <class T>
  T get(const char* what) {
    T v;
    need(sizeof v, what);
    std::memcpy(&v, data_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
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
    if (data_.size() - pos_ < n)
      throw BadInput(file_ + ": truncated checkpoint at byte " + std::to_string(pos_) + " reading " + what + " (" +
                     std::to_string(n) + " bytes expected, " + std::to_string(data_.size() - pos_) + " left)");
  }
  size_t pos() const { return pos_; }

 private:
  std::string data_, file_;
  size_t pos_ = 0;
};

std::string rank_prefix(int rank) { return "rank-" + std::to_string(rank) + ".step-"; }

}  // namespace

fs::path rank_file(const fs::path& dir, int rank, int64_t step) {
  return dir / (rank_prefix(rank) + std::to_string(step) + ".bin");
}

void write_rank_state(const fs::path& dir, int rank, const RankState& s) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw RunFailed(dir.string() + ": cannot create the checkpoint folder: " + ec.message());
  std::string out(kMagic, sizeof kMagic);
  put(out, s.step);
  put_bytes(out, s.params.data(), s.params.size() * sizeof(float));
  put_bytes(out, s.buffers.data(), s.buffers.size() * sizeof(float));
  put_bytes(out, s.optimizer.data(), s.optimizer.size());
  std::string extra = s.extra.dump();
  put_bytes(out, extra.data(), extra.size());
  write_file_atomic(rank_file(dir, rank, s.step), out, false);
}

void remove_rank_states(const fs::path& dir, int rank, int64_t keep) {
  const std::string prefix = rank_prefix(rank), kept = rank_file(dir, rank, keep).filename().string();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name != kept) fs::remove(entry.path(), ec);
  }
}

RankState read_rank_state(const fs::path& dir, int rank, int64_t expect_step) {
  fs::path file = rank_file(dir, rank, expect_step);
  if (!fs::exists(file)) throw BadInput(file.string() + ": checkpoint file of rank " + std::to_string(rank) + " is missing");
  // Weights, buffers and optimizer state: a few times the model, far below this bound.
  std::string data = read_regular_file(file, uint64_t{64} << 30, "checkpoint file");
  if (data.size() < sizeof kMagic || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0)
    throw BadInput(file.string() + ": not a dtbench checkpoint (wrong magic number at byte 0)");
  Reader r(data.substr(sizeof kMagic), file.string());
  RankState s;
  s.step = r.get<int64_t>("the step");
  if (s.step != expect_step)
    throw BadInput(file.string() + ": rank file is from step " + std::to_string(s.step) + " but the header says " +
                   std::to_string(expect_step) + " (a stale or mixed checkpoint)");
  s.params = r.floats("the weights");
  s.buffers = r.floats("the batch-norm buffers");  // none in a model without batch norm
  std::string o = r.bytes("the optimizer state");
  s.optimizer.assign(o.begin(), o.end());
  std::string e = r.bytes("the extra state");
  try {
    s.extra = Json::parse(e);
  } catch (const Json::parse_error&) {
    throw BadInput(file.string() + ": damaged extra state");
  }
  return s;
}

void write_header(const fs::path& dir, const Json& header) {
  write_json_atomic(dir / "header.json", header, false);
}

Json read_header(const fs::path& dir) {
  fs::path file = dir / "header.json";
  if (!fs::exists(file)) return Json();
  const std::string text = read_regular_file(file, uint64_t{64} << 20, "checkpoint header");
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw BadInput(file.string() + ": damaged checkpoint header (byte " + std::to_string(e.byte) + ")");
  }
}

std::string first_difference(const Json& a, const Json& b) {
  nlohmann::json patch = nlohmann::json::diff(nlohmann::json::parse(a.dump()), nlohmann::json::parse(b.dump()));
  if (patch.empty()) return "";
  return patch[0]["path"].get<std::string>();
}

}  // namespace dtbench
