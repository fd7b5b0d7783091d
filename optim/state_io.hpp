// Exact (bitwise) serialisation of optimizer state to a byte vector.
//
// Values are written in the machine's byte order (little-endian on every platform dtbench targets):
// integers as 8 bytes, doubles and floats as their IEEE bits, so a save/restore round trip changes
// nothing. The reader checks bounds and names the byte offset of anything malformed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dtbench::optim {

class StateWriter {
 public:
  void put_u64(uint64_t v);
  void put_i64(int64_t v) { put_u64(static_cast<uint64_t>(v)); }
  void put_f64(double v);
  void put_string(const std::string& s);
  // Length-prefixed float array.
  void put_floats(std::span<const float> v);
  void put_doubles(std::span<const double> v);
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  void put_raw(const void* p, size_t n);
  std::vector<uint8_t> bytes_;
};

class StateReader {
 public:
  explicit StateReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  uint64_t get_u64();
  int64_t get_i64() { return static_cast<int64_t>(get_u64()); }
  double get_f64();
  std::string get_string();
  // Reads a length-prefixed float array into `out`, which must already have the stored length
  // (throws BadInput naming the offset otherwise).
  void get_floats(std::span<float> out, const char* what);
  void get_doubles(std::span<double> out, const char* what);
  // A buffer that a hyperparameter switches on (momentum > 0, centring), which --init-from may change: a state saved
  // with the other setting holds none (returns false, `out` left as it is: the caller starts it afresh), or one this
  // optimizer keeps none of (skipped). Otherwise as get_floats, returning true.
  bool get_switched_floats(std::span<float> out, const char* what);
  // Throws BadInput unless every byte was consumed.
  void expect_end() const;
  size_t offset() const { return pos_; }

 private:
  void get_raw(void* p, size_t n, const char* what);
  void get_array(void* p, size_t count, size_t element_bytes, const char* what);
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

// The header every optimizer state starts with, on both backends: a magic string, the optimizer's name, the
// parameter table's fingerprint and the step count. get_state_header throws BadInput for a state of another
// kind, optimizer or table, or a negative step count, and returns the step count.
void put_state_header(StateWriter& out, const std::string& name, uint64_t table_fingerprint, int64_t steps);
int64_t get_state_header(StateReader& in, const std::string& name, uint64_t table_fingerprint);

}  // namespace dtbench::optim
