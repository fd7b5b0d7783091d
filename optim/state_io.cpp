#include "optim/state_io.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.hpp"

namespace dtbench::optim {

void StateWriter::put_raw(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  bytes_.insert(bytes_.end(), b, b + n);
}

void StateWriter::put_u64(uint64_t v) { put_raw(&v, sizeof v); }
void StateWriter::put_f64(double v) { put_raw(&v, sizeof v); }

void StateWriter::put_string(const std::string& s) {
  put_u64(s.size());
  put_raw(s.data(), s.size());
}

void StateWriter::put_floats(std::span<const float> v) {
  put_u64(v.size());
  put_raw(v.data(), v.size_bytes());
}

void StateWriter::put_doubles(std::span<const double> v) {
  put_u64(v.size());
  put_raw(v.data(), v.size_bytes());
}

void StateReader::get_raw(void* p, size_t n, const char* what) {
  if (n > bytes_.size() - pos_) {
    throw BadInput("optimizer state: truncated at byte " + std::to_string(pos_) + " reading " + what + " (" +
                   std::to_string(n) + " bytes wanted, " + std::to_string(bytes_.size() - pos_) + " left)");
  }
  std::memcpy(p, bytes_.data() + pos_, n);
  pos_ += n;
}

uint64_t StateReader::get_u64() {
  uint64_t v = 0;
  get_raw(&v, sizeof v, "an integer");
  return v;
}

double StateReader::get_f64() {
  double v = 0;
  get_raw(&v, sizeof v, "a double");
  return v;
}

std::string StateReader::get_string() {
  const size_t at = pos_;
  const uint64_t n = get_u64();
  if (n > bytes_.size() - pos_) {
    throw BadInput("optimizer state: string length " + std::to_string(n) + " at byte " + std::to_string(at) +
                   " runs past the end");
  }
  std::string s(n, '\0');
  get_raw(s.data(), n, "a string");
  return s;
}

void StateReader::get_array(void* p, size_t count, size_t element_bytes, const char* what) {
  const size_t at = pos_;
  const uint64_t n = get_u64();
  if (n != count) {
    throw BadInput("optimizer state: " + std::string(what) + " at byte " + std::to_string(at) + " has " +
                   std::to_string(n) + " elements, expected " + std::to_string(count));
  }
  get_raw(p, count * element_bytes, what);
}

// A NaN in a moment or buffer is no state a run can continue from: its next update writes NaN into the weights
// (the checksum around the state cannot tell, a file written with the NaN in it has a matching one). An infinity
// can be: a saturated accumulator (Adam's second moment, Adagrad's sum, Adamax's norm) only scales its steps to 0.
template <typename T>
static void expect_no_nan(std::span<const T> values, size_t first_byte, const char* what) {
  for (size_t i = 0; i < values.size(); ++i)
    if (std::isnan(values[i]))
      throw BadInput("optimizer state: " + std::string(what) + " holds a NaN at byte " +
                     std::to_string(first_byte + i * sizeof(T)) + " (element " + std::to_string(i) + ")");
}

void StateReader::get_floats(std::span<float> out, const char* what) {
  get_array(out.data(), out.size(), sizeof(float), what);
  expect_no_nan<float>(out, pos_ - out.size_bytes(), what);
}

bool StateReader::get_switched_floats(std::span<float> out, const char* what) {
  StateReader ahead = *this;
  const uint64_t n = ahead.get_u64();
  if (n == out.size()) {
    get_floats(out, what);
    return true;
  }
  if (n == 0 || out.empty()) {
    *this = ahead;
    if (n > (bytes_.size() - pos_) / sizeof(float))
      throw BadInput("optimizer state: truncated at byte " + std::to_string(pos_) + " reading " + what);
    pos_ += n * sizeof(float);
    return n > 0;
  }
  get_floats(out, what);  // a count that fits neither: the element-count error
  return true;
}

void StateReader::get_doubles(std::span<double> out, const char* what) {
  get_array(out.data(), out.size(), sizeof(double), what);
  expect_no_nan<double>(out, pos_ - out.size_bytes(), what);
}

void StateReader::expect_end() const {
  if (pos_ != bytes_.size()) {
    throw BadInput("optimizer state: " + std::to_string(bytes_.size() - pos_) + " unexpected bytes after byte " +
                   std::to_string(pos_));
  }
}

namespace {
constexpr char kStateMagic[] = "DTBOPT01";  // 8 bytes + NUL
}  // namespace

void put_state_header(StateWriter& out, const std::string& name, uint64_t table_fingerprint, int64_t steps) {
  out.put_string(kStateMagic);
  out.put_string(name);
  out.put_u64(table_fingerprint);
  out.put_i64(steps);
}

int64_t get_state_header(StateReader& in, const std::string& name, uint64_t table_fingerprint) {
  if (in.get_string() != kStateMagic) throw BadInput("optimizer state: not a dtbench optimizer state (bad magic)");
  const std::string stored_name = in.get_string();
  // A damaged length (a format-1 checkpoint has no checksum) reads bytes that are no name: say so, not them.
  const bool a_name = !stored_name.empty() && stored_name.size() <= 64 && std::all_of(stored_name.begin(), stored_name.end(), [](char c) {
                        return c > ' ' && c < 0x7f;
                      });
  if (!a_name)
    throw BadInput("optimizer state: damaged: the optimizer's name is " + std::to_string(stored_name.size()) +
                   " bytes that are not a name");
  if (stored_name != name) {
    throw BadInput("optimizer state: saved by optimizer '" + stored_name + "', cannot restore into '" + name + "'");
  }
  if (in.get_u64() != table_fingerprint) {
    throw BadInput("optimizer state: saved for a different parameter table (names, offsets, sizes or kinds differ)");
  }
  const int64_t t = in.get_i64();
  if (t < 0) throw BadInput("optimizer state: negative step count " + std::to_string(t));
  return t;
}

}  // namespace dtbench::optim
