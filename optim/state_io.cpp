#include "optim/state_io.hpp"

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

void StateReader::get_floats(std::span<float> out, const char* what) {
  const size_t at = pos_;
  const uint64_t n = get_u64();
  if (n != out.size()) {
    throw BadInput("optimizer state: " + std::string(what) + " at byte " + std::to_string(at) + " has " +
                   std::to_string(n) + " elements, expected " + std::to_string(out.size()));
  }
  get_raw(out.data(), out.size_bytes(), what);
}

void StateReader::expect_end() const {
  if (pos_ != bytes_.size()) {
    throw BadInput("optimizer state: " + std::to_string(bytes_.size() - pos_) + " unexpected bytes after byte " +
                   std::to_string(pos_));
  }
}

}  // namespace dtbench::optim
