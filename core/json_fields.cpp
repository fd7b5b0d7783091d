#include "core/json_fields.hpp"

#include <algorithm>
#include <cstdint>

#include "core/error.hpp"

namespace dtbench {

void throw_wrong_type(const std::string& pointer, const std::string& what, const Json& got) {
  std::string shown = got.dump();
  if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
  throw BadInput((pointer.empty() ? "/" : pointer) + ": expected " + what + ", got " + shown);
}

JsonFields::JsonFields(const Json& object, std::string pointer) : object_(object), pointer_(std::move(pointer)) {
  if (!object_.is_object()) throw_wrong_type(pointer_, "an object", object_);
}

const Json& JsonFields::at(const std::string& key) const {
  auto it = object_.find(key);
  if (it == object_.end()) throw BadInput(pointer(key) + ": missing");
  return *it;
}

std::string JsonFields::string(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_string()) throw_wrong_type(pointer(key), "a string", v);
  return v.get<std::string>();
}

int64_t JsonFields::integer(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_number_integer()) throw_wrong_type(pointer(key), "an integer", v);
  // An unsigned number above 2^63 - 1 would wrap to a negative int64_t.
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw_wrong_type(pointer(key), "an integer below 2^63", v);
  return v.get<int64_t>();
}

double JsonFields::nonneg_number(const std::string& key) const {
  const double v = number(key);
  if (!(v >= 0)) throw_wrong_type(pointer(key), "a number >= 0", at(key));
  return v;
}

double JsonFields::fraction(const std::string& key) const {
  const double v = number(key);
  if (!(v >= 0 && v <= 1)) throw_wrong_type(pointer(key), "a number from 0 to 1", at(key));
  return v;
}

double JsonFields::number(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_number()) throw_wrong_type(pointer(key), "a number", v);
  return v.get<double>();
}

bool JsonFields::boolean(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_boolean()) throw_wrong_type(pointer(key), "true or false", v);
  return v.get<bool>();
}

int64_t JsonFields::integer(const std::string& key, int64_t min, int64_t max) const {
  const int64_t v = integer(key);
  if (v < min || v > max)
    throw_wrong_type(pointer(key), "an integer from " + std::to_string(min) + " to " + std::to_string(max), at(key));
  return v;
}

const Json& JsonFields::object(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_object()) throw_wrong_type(pointer(key), "an object", v);
  return v;
}

const Json& JsonFields::array(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_array()) throw_wrong_type(pointer(key), "a list", v);
  return v;
}

std::vector<std::string> JsonFields::strings(const std::string& key) const {
  std::vector<std::string> out;
  const Json& list = array(key);
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) throw_wrong_type(pointer(key) + "/" + std::to_string(i), "a string", list[i]);
    out.push_back(list[i].get<std::string>());
  }
  return out;
}

std::vector<JsonFields> JsonFields::items(const std::string& key) const {
  std::vector<JsonFields> out;
  const Json& list = array(key);
  for (size_t i = 0; i < list.size(); ++i) out.emplace_back(list[i], pointer(key) + "/" + std::to_string(i));
  return out;
}

void JsonFields::only(std::initializer_list<const char*> known) const {
  for (auto it = object_.begin(); it != object_.end(); ++it)
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; }))
      throw BadInput(pointer(it.key()) + ": unexpected field");
}

}  // namespace dtbench
