// The run-config reader as `dtbench config FILE --set ... [--ranks K]` and `dtbench train` run it: the file's
// text through the strict JSON parser, the --set overrides, validation against the schema with every default
// filled in, the cross-field rules (without and with a rank count), and the printed result.
// Input: the config's text, then one --set argument after each separator line (fuzz/fuzz_input.hpp).
#include "config/run_config.hpp"
#include "core/config.hpp"
#include "fuzz/fuzz_input.hpp"

using namespace dtbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = fuzz::split(data, size, 9);
  const std::vector<std::string> sets(parts.begin() + 1, parts.end());
  fuzz::bad_input_is_fine([&] {
    const Json user = config::user_config(parse_json(parts[0], "fuzz.json"), "fuzz.json", sets);
    for (int ranks : {0, 3}) (void)config::resolve(user, ranks).dump(2);
  });
  return 0;
}
