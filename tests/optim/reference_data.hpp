// Loading the committed reference vectors of optim/reference (written by make_vectors.py).
#pragma once

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "optim/param_table.hpp"

namespace dtbench::optim::testing {

inline std::string reference_path(const std::string& file) {
  return std::string(DTBENCH_SOURCE_DIR) + "/optim/reference/" + file;
}

inline Json read_json(const std::string& file) {
  std::ifstream in(reference_path(file));
  if (!in) throw std::runtime_error("cannot open " + reference_path(file));
  return Json::parse(in);
}

// The optimizer problem: the parameter table, the float32 arrays and the manifest.
struct OptimizerReference {
  Json manifest;
  std::vector<uint8_t> blob;
  ParamTable table;

  OptimizerReference() : manifest(read_json("optimizers.json")) {
    std::ifstream in(reference_path("optimizers.bin"), std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + reference_path("optimizers.bin"));
    blob.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::vector<TensorInfo> tensors;
    for (const Json& t : manifest["table"]) {
      tensors.push_back({t["name"].get<std::string>(), t["offset"].get<size_t>(), t["size"].get<size_t>(),
                         tensor_kind_from_string(t["kind"].get<std::string>(), "table")});
    }
    table = ParamTable(std::move(tensors));
  }

  std::vector<float> array(const std::string& key) const {
    const Json& a = manifest["arrays"].at(key);
    const size_t offset = a["offset"].get<size_t>();
    const size_t count = a["count"].get<size_t>();
    if (offset + count * sizeof(float) > blob.size()) throw std::runtime_error("array " + key + " out of range");
    std::vector<float> v(count);
    std::memcpy(v.data(), blob.data() + offset, count * sizeof(float));
    return v;
  }
};

}  // namespace dtbench::optim::testing
