// Reads the keys of one config section (e.g. "/optimizer" for sgd, "/schedule/warmup"): a present key
// must have the right type (BadInput naming it, "/optimizer/momentum: must be a number, got ..."); an
// absent key takes its default from the section's schema fields, the one place defaults live. The
// factories read through it so that a section built by hand (tests, benchmarks) gets the same defaults
// as a resolved config.
#pragma once

#include <cstdint>
#include <string>

#include "core/config_spec.hpp"
#include "core/json.hpp"

namespace dtbench::optim {

class SectionReader {
 public:
  // `where` is the section's JSON pointer; `fields` its schema fields (copied).
  SectionReader(const Json& section, std::string where, config::Fields fields);

  double number(const char* key) const;
  int64_t integer(const char* key) const;
  std::string text(const char* key) const;
  bool flag(const char* key) const;
  bool has(const char* key) const { return section_.contains(key); }
  const Json& value(const char* key) const;  // the user's value or the default, unchecked

 private:

  const Json& section_;
  std::string where_;
  config::Fields fields_;
};

}  // namespace dtbench::optim
