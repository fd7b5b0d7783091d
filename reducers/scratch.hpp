// A grow-only scratch buffer of the reducers: allocated on first use for a size, reused afterwards.
#pragma once

#include <cstddef>
#include <vector>

namespace dtbench {

class Scratch {
 public:
  float* get(size_t elems) {
    if (buf_.size() < elems) buf_.resize(elems);
    return buf_.data();
  }

 private:
  std::vector<float> buf_;
};

}  // namespace dtbench
