// The CIFAR binary reader as `dtbench train` runs it on a data folder: the files one after another (each
// inflated first when it starts with gzip's magic bytes), read as CIFAR-10 records (label, 3072 pixels) and as
// CIFAR-100 records (coarse and fine label, 3072 pixels).
// Input: up to three files, separated by separator lines (fuzz/fuzz_input.hpp).
#include "fuzz/fuzz_input.hpp"
#include "workloads/data/dataset.hpp"
#include "workloads/data/file_bytes.hpp"

using namespace dtbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = fuzz::split(data, size, 3);
  for (int classes : {10, 100}) {
    fuzz::bad_input_is_fine([&] {
      std::vector<data::FileBytes> files;
      for (size_t i = 0; i < parts.size(); ++i)
        files.push_back(data::file_bytes("data_batch_" + std::to_string(i + 1) + ".bin",
                                         std::vector<uint8_t>(parts[i].begin(), parts[i].end())));
      (void)data::parse_cifar(files, classes);
    });
  }
  return 0;
}
