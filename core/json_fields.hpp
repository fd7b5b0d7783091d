// Typed reads of a JSON object written by dtbench (run records, campaign indexes). A field that is
// missing, has the wrong type or was not expected throws BadInput naming its JSON pointer:
// "/timing/total: missing", "/ranks: expected an integer, got \"2\"", "/surprise: unexpected field".
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace dtbench {

class JsonFields {
 public:
  // `pointer` is where `object` sits in its document ("" for the root).
  JsonFields(const Json& object, std::string pointer);

  bool has(const std::string& key) const { return object_.contains(key); }
  const Json& at(const std::string& key) const;
  std::string string(const std::string& key) const;
  int64_t integer(const std::string& key) const;
  // An integer from `min` to `max` (a rank count of 0 or 2^40 is as wrong as a text).
  int64_t integer(const std::string& key, int64_t min, int64_t max) const;
  double number(const std::string& key) const;
  // A number >= 0 ("/time_us: expected a number >= 0, got -1").
  double nonneg_number(const std::string& key) const;
  // A number from 0 to 1 (an accuracy): "/curve/0/test_accuracy: expected a number from 0 to 1, got 5.0".
  double fraction(const std::string& key) const;
  bool boolean(const std::string& key) const;
  const Json& object(const std::string& key) const;
  const Json& array(const std::string& key) const;
  std::vector<std::string> strings(const std::string& key) const;
  JsonFields fields(const std::string& key) const { return JsonFields(object(key), pointer(key)); }
  // The items of a list of objects, each with its own pointer ("/curve/3").
  std::vector<JsonFields> items(const std::string& key) const;

  // The JSON pointer of a field of this object.
  std::string pointer(const std::string& key) const { return pointer_ + "/" + key; }
  // Throws for the first field not in `known`: dtbench writes these objects whole, so another field
  // means another writer or a later format.
  void only(std::initializer_list<const char*> known) const;

 private:
  const Json& object_;
  std::string pointer_;
};

// "expected <what>, got <the value>" at `pointer`.
[[noreturn]] void throw_wrong_type(const std::string& pointer, const std::string& what, const Json& got);

}  // namespace dtbench
