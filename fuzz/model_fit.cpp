// The `dtbench model --fit SWEEP.json ... [--holdout OTHER.json] [--check MEASURED.json]` input reader: each
// `dtbench allreduce --json` document through the strict JSON parser, its rows read and checked, the cost
// model fitted to them (per reducer, non-negative least squares) and its predictions, the held-out error and
// the check rows computed on the same documents.
// Input: up to four sweep documents, separated by separator lines (fuzz/fuzz_input.hpp).
#include "fuzz/fuzz_input.hpp"
#include "reducers/cost_model.hpp"

using namespace dtbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = fuzz::split(data, size, 4);
  fuzz::bad_input_is_fine([&] {
    std::vector<Json> docs;
    for (size_t i = 0; i < parts.size(); ++i)
      docs.push_back(parse_json(parts[i], "sweep" + std::to_string(i) + ".json"));
    const FittedModel m = fit_cost_model(docs);
    (void)m.to_json().dump();
    for (const auto& entry : m.params)
      for (int ranks : {2, 16, 4096}) (void)m.predict(entry.first, ranks, ranks, 1e8);
    (void)holdout_rms_rel_error(m, docs);
    ReducerOptions options;
    (void)rms_rel_error(m, sweep_rows(docs, "--check file", options));
  });
  return 0;
}
