#include "optim/section_reader.hpp"

#include <stdexcept>

#include "core/error.hpp"

namespace dtbench::optim {

SectionReader::SectionReader(const Json& section, std::string where, config::Fields fields)
    : section_(section), where_(std::move(where)), fields_(std::move(fields)) {}

const Json& SectionReader::value(const char* key) const {
  if (section_.contains(key)) return section_[key];
  for (const auto& [k, node] : fields_)
    if (k == key) return node.def;
  throw std::logic_error(where_ + "/" + key + ": not in the schema");  // a factory reads a key it never declared
}

double SectionReader::number(const char* key) const {
  const Json& v = value(key);
  if (!v.is_number()) throw BadInput(where_ + "/" + key + ": must be a number, got " + v.dump());
  return v.get<double>();
}

int64_t SectionReader::integer(const char* key) const {
  const Json& v = value(key);
  if (!v.is_number_integer()) throw BadInput(where_ + "/" + key + ": must be an integer, got " + v.dump());
  return v.get<int64_t>();
}

std::string SectionReader::text(const char* key) const {
  const Json& v = value(key);
  if (!v.is_string()) throw BadInput(where_ + "/" + key + ": must be a string, got " + v.dump());
  return v.get<std::string>();
}

bool SectionReader::flag(const char* key) const {
  const Json& v = value(key);
  if (!v.is_boolean()) throw BadInput(where_ + "/" + key + ": must be true or false, got " + v.dump());
  return v.get<bool>();
}

}  // namespace dtbench::optim
