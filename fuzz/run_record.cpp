// The run-record reader (core/run_record) as `dtbench table`, `dtbench sweep` (is a run done?) and `dtbench
// train --baseline` run it: the record's text through the strict JSON parser, every field checked, the "done"
// rule; and its documented promise that to_json gives the document back: a record read and written is read as
// the same record (a difference aborts, a finding).
// Input: the record's text.
#include <cstdio>
#include <cstdlib>

#include "core/run_record.hpp"
#include "fuzz/fuzz_input.hpp"

using namespace dtbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::bad_input_is_fine([&] {
    const RunRecord r = RunRecord::from_json(parse_json(text, "record.json"));
    (void)r.done();
    if (!(RunRecord::from_json(r.to_json()) == r)) {
      std::fprintf(stderr, "run_record: to_json then from_json gives a different record\n");
      std::abort();
    }
  });
  return 0;
}
