// The campaign index reads back what it wrote, and refuses every other shape with the JSON pointer of
// the first wrong field: `dtbench table` once crashed on points of empty objects.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/campaign_index.hpp"
#include "core/error.hpp"

using namespace dtbench;

namespace {

CampaignIndex two_points() {
  CampaignIndex c;
  c.name = "c";
  c.axes = {{"/axes", {"reducer.name"}}};
  c.repeats = 1;
  c.program = {"dtbench", "train"};
  for (const char* reducer : {"ring", "tree"}) {
    CampaignIndex::Point p;
    p.id = std::string("p-") + reducer;
    p.label = p.id;
    p.values = {{"reducer.name", reducer}};
    p.ranks = 2;
    p.slurm = Json::object();
    p.runs = {{p.id + "-s1", 1, "configs/" + p.id + ".json", "runs/" + p.id + ".json", "scripts/" + p.id + ".sbatch", 3}};
    c.points.push_back(p);
  }
  return c;
}

// from_json's message for the index changed by `change`; "" when it reads.
std::string problem(const std::function<void(Json&)>& change) {
  Json j = two_points().to_json();
  change(j);
  try {
    CampaignIndex::from_json(j);
    return "";
  } catch (const BadInput& e) {
    return e.what();
  }
}

}  // namespace

TEST(CampaignIndex, ReadsBackWhatItWrote) {
  const CampaignIndex c = two_points();
  EXPECT_EQ(CampaignIndex::from_json(Json::parse(c.to_json().dump())), c);
}

TEST(CampaignIndex, NamesTheFirstWrongFieldByPointer) {
  EXPECT_EQ(problem([](Json& j) { j["points"] = Json::array({Json::object()}); }), "/points/0/id: missing");
  EXPECT_EQ(problem([](Json& j) { j["points"] = Json::object(); }), "/points: expected a list, got {}");
  EXPECT_EQ(problem([](Json& j) { j["points"] = Json::array({Json::array()}); }), "/points/0: expected an object, got []");
  EXPECT_EQ(problem([](Json& j) { j["points"][1]["ranks"] = "2"; }), "/points/1/ranks: expected an integer, got \"2\"");
  EXPECT_EQ(problem([](Json& j) { j["points"][1]["ranks"] = 1e20; }), "/points/1/ranks: expected an integer, got 1e+20");
  EXPECT_EQ(problem([](Json& j) { j["points"][0]["runs"][0] = Json::object(); }), "/points/0/runs/0/name: missing");
  // Each run once: a record listed twice would count as two repeats.
  EXPECT_EQ(problem([](Json& j) { j["points"][1]["runs"][0]["record"] = j["points"][0]["runs"][0]["record"]; }),
            "/points/1/runs/0/record: \"runs/p-ring.json\" is listed twice (also at /points/0/runs/0/record)");
  EXPECT_EQ(problem([](Json& j) { j["points"][0]["runs"].push_back(j["points"][0]["runs"][0]); }),
            "/points/0/runs/1/name: \"p-ring-s1\" is listed twice (also at /points/0/runs/0/name)");
  // One run per repeat: a point listing none vanished from the table, one listing fewer read "1/1 done" (a hunt).
  EXPECT_EQ(problem([](Json& j) { j["points"][1]["runs"] = Json::array(); }),
            "/points/1/runs: 0 run(s), where /repeats says 1 (one run per repeat)");
  EXPECT_EQ(problem([](Json& j) { j["repeats"] = 2; }), "/points/0/runs: 1 run(s), where /repeats says 2 (one run per repeat)");
  EXPECT_EQ(problem([](Json& j) { j["points"][0]["runs"][0]["record"] = 5; }),
            "/points/0/runs/0/record: expected a string, got 5");
  EXPECT_EQ(problem([](Json& j) { j["points"][0]["values"] = Json::array(); }),
            "/points/0/values: expected an object, got []");
  EXPECT_EQ(problem([](Json& j) { j["axes"][0]["keys"] = {1}; }), "/axes/0/keys/0: expected a string, got 1");
  EXPECT_EQ(problem([](Json& j) { j["kind"] = "dtbench-run-record"; }),
            "/kind: expected \"dtbench-campaign\", got \"dtbench-run-record\"");
  EXPECT_EQ(problem([](Json& j) { j = Json::array(); }), "/: expected an object, got []");
}

TEST(CampaignIndex, CountsAreInRange) {
  // A rank count below 1 would divide by zero in the scaling efficiency; one beyond an int is cut.
  EXPECT_EQ(problem([](Json& j) { j["points"][0]["ranks"] = 0; }),
            "/points/0/ranks: expected an integer from 1 to 2147483647, got 0");
  EXPECT_EQ(problem([](Json& j) { j["points"][0]["ranks"] = int64_t{1} << 31; }),
            "/points/0/ranks: expected an integer from 1 to 2147483647, got 2147483648");
  EXPECT_EQ(problem([](Json& j) { j["points"][0]["ranks"] = 2147483647; }), "");
  EXPECT_EQ(problem([](Json& j) { j["repeats"] = -1; }), "/repeats: expected an integer from 1 to 2147483647, got -1");
  EXPECT_EQ(problem([](Json& j) { j["points"][0]["runs"][0]["array_task"] = -2; }),
            "/points/0/runs/0/array_task: expected an integer from 0 to 2147483647, got -2");
}
