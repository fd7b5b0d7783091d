// The IDX reader (MNIST, Fashion-MNIST) as `dtbench train` runs it on a data folder: the images file and the
// labels file, each inflated first when it starts with gzip's magic bytes (several members, a trailer's size
// claim that is only a guess), then the headers, sizes and labels checked.
// Input: the images file, a separator line (fuzz/fuzz_input.hpp), the labels file.
#include "fuzz/fuzz_input.hpp"
#include "workloads/data/dataset.hpp"
#include "workloads/data/file_bytes.hpp"

using namespace dtbench;

namespace {
std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = fuzz::split(data, size, 2);
  fuzz::bad_input_is_fine([&] {
    data::FileBytes images = data::file_bytes("train-images-idx3-ubyte", bytes(parts[0]));
    data::FileBytes labels = data::file_bytes("train-labels-idx1-ubyte", bytes(parts.size() > 1 ? parts[1] : ""));
    (void)data::parse_idx(std::move(images), std::move(labels), 10);
  });
  return 0;
}
