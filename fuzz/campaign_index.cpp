// The campaign-index reader (core/campaign_index) and the records it names, as `dtbench table DIR` reads them
// (analysis/campaign_data): the index's text through the strict JSON parser and every field checked (and the
// promise that an index read and written is read as the same index: a difference aborts, a finding), then
// the folder loaded as the command loads it, each record through the record reader, and the table rendered
// in every format.
// Input: campaign.json, then records r0.json, r1.json, ... after separator lines (fuzz/fuzz_input.hpp),
// written into a scratch folder (the table reads a folder); an empty first part leaves campaign.json out, so
// the folder is read as a folder of records.
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "analysis/campaign_data.hpp"
#include "analysis/campaign_table.hpp"
#include "analysis/text_table.hpp"
#include "core/campaign_index.hpp"
#include "fuzz/fuzz_input.hpp"

using namespace dtbench;
namespace fs = std::filesystem;

namespace {
void write(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary);
  out << text;
  if (!out) std::abort();  // the scratch folder must be writable
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = fuzz::split(data, size, 5);
  fuzz::bad_input_is_fine([&] {
    const CampaignIndex idx = CampaignIndex::from_json(parse_json(parts[0], "campaign.json"));
    if (!(CampaignIndex::from_json(idx.to_json()) == idx)) {
      std::fprintf(stderr, "campaign_index: to_json then from_json gives a different index\n");
      std::abort();
    }
  });

  const fs::path dir = fuzz::scratch() / "campaign";
  fs::remove_all(dir);
  fs::create_directories(dir);
  if (!parts[0].empty()) write(dir / "campaign.json", parts[0]);
  for (size_t i = 1; i < parts.size(); ++i) write(dir / ("r" + std::to_string(i - 1) + ".json"), parts[i]);
  fuzz::bad_input_is_fine([&] {
    const analysis::CampaignData c = analysis::load_campaign(dir);
    for (analysis::Format f : {analysis::Format::md, analysis::Format::csv, analysis::Format::latex})
      (void)analysis::render(analysis::campaign_table(c, {}, f), f);
  });
  return 0;
}
