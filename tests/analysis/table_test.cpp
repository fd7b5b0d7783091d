// Result tables: statistics against hand-computed medians, the three text formats against exact
// expected text, a campaign with done, failed and missing runs (nothing dropped), and the published
// tables against the figures in shared/REFERENCES.md and their own internal consistency.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <optional>

#include "analysis/campaign_data.hpp"
#include "analysis/campaign_table.hpp"
#include "analysis/mlperf_rcp.hpp"
#include "analysis/published.hpp"
#include "analysis/summary.hpp"
#include "analysis/text_table.hpp"
#include "core/atomic_file.hpp"
#include "core/campaign_index.hpp"
#include "core/error.hpp"
#include "core/run_record.hpp"
#include "slurm/campaign.hpp"
#include "slurm/expand.hpp"
#include "slurm/spec.hpp"

using dtbench::Json;
using namespace dtbench::analysis;
namespace fs = std::filesystem;

TEST(Summary, MedianMinMax) {
  auto s = summarize({3, 1, 2});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->median, 2);
  EXPECT_EQ(s->min, 1);
  EXPECT_EQ(s->max, 3);
  EXPECT_EQ(s->n, 3u);
  EXPECT_EQ(summarize({4, 1, 3, 2})->median, 2.5);
  EXPECT_EQ(summarize({7})->median, 7);
  EXPECT_FALSE(summarize({}));
  // The median of two values near DBL_MAX is theirs, not inf (a table printed "inf [1e+308, 1e+308]").
  EXPECT_EQ(summarize({1e308, 1e308})->median, 1e308);
  EXPECT_EQ(summarize({-1e308, 1e308})->median, 0);
}

TEST(TextTable, ThreeFormatsEscapeWhatTheyMust) {
  TextTable t;
  t.caption = "Caption 50%";
  t.header = {"key", "value"};
  t.right = {false, true};
  t.rows = {{"a|b", "1"}, {"x,y \"q\"", "2"}, {"r_&#$", "3"}};
  t.notes = {"note ~"};
  EXPECT_EQ(render(t, Format::md),
            "Caption 50%\n\n| key | value |\n| --- | ---: |\n| a\\|b | 1 |\n| x,y \"q\" | 2 |\n| r\\_\\&#\\$ | 3 |\n\n- note \\~\n");
  EXPECT_EQ(render(t, Format::csv), "key,value\r\na|b,1\r\n\"x,y \"\"q\"\"\",2\r\nr_&#$,3\r\n");
  EXPECT_EQ(render(t, Format::latex),
            "\\begin{table}[ht]\n\\centering\n\\caption{Caption 50\\%}\n\\begin{tabular}{lr}\n\\toprule\nkey & value "
            "\\\\\n\\midrule\na\\textbar{}b & 1 \\\\\nx,y \"q\" & 2 \\\\\nr\\_\\&\\#\\$ & 3 \\\\\n\\bottomrule\n\\end{tabular}\n"
            "\\par\\smallskip\\footnotesize\nnote \\textasciitilde{}\\\\\n\\end{table}\n");
  // A line break of either kind inside a cell: one space in markdown and LaTeX (a bare CR ends a CommonMark line and
  // broke the row; a hunt), quoted in CSV.
  t.rows = {{"x\r\ny", "1"}};
  t.notes.clear();
  t.caption.clear();
  EXPECT_EQ(render(t, Format::md), "| key | value |\n| --- | ---: |\n| x  y | 1 |\n");
  EXPECT_EQ(render(t, Format::csv), "key,value\r\n\"x\r\ny\",1\r\n");
  EXPECT_NE(render(t, Format::latex).find("x  y & 1"), std::string::npos);
  EXPECT_THROW(parse_format("html"), dtbench::BadInput);
}

// Names and values are text, never markup: what CommonMark (spec 0.30) and GitHub's table and strikethrough
// extensions would read as emphasis, code, a link, an image, an HTML tag, an entity, strikethrough, a cell border
// or a block is escaped with a backslash, which renders as the character itself; underscores inside a word cannot
// open emphasis there and stay as typed. In CSV, a cell a spreadsheet would run as a formula gets an apostrophe.
TEST(TextTable, MarkdownAndCsvCellsAreTextNotMarkup) {
  TextTable t;
  t.header = {"name"};
  t.rows = {{"*bold* and _em_"}, {"`code`"}, {"[x](http://a) ![i](b.png) [r][1]"}, {"<b>html</b> &amp; &#42; $x^2$"},
            {"~~gone~~"}, {"a\\|b"}, {"parameter_server lr_0.1"}, {"a & b; [1, 2]; x <= 1 < 2"}};
  t.caption = "# not a heading";
  t.notes = {"1. not a list", "> not a quote", "- not an item", "[ ] not a box", "[1] Goyal et al. 2017", "+1",
             "[r]: javascript:alert(1)", "   # after spaces", "    code?", " ---", "<42@example.com>"};
  EXPECT_EQ(render(t, Format::md),
            "\\# not a heading\n\n| name |\n| --- |\n"
            "| \\*bold\\* and \\_em\\_ |\n"
            "| \\`code\\` |\n"
            "| [x\\](http://a) ![i\\](b.png) [r][1] |\n"
            "| \\<b>html\\</b> \\&amp; \\&#42; \\$x^2\\$ |\n"
            "| \\~\\~gone\\~\\~ |\n"
            "| a\\\\\\|b |\n"
            "| parameter_server lr_0.1 |\n"
            "| a & b; [1, 2]; x <= 1 < 2 |\n\n"
            "- 1\\. not a list\n- \\> not a quote\n- \\- not an item\n- \\[ ] not a box\n- [1] Goyal et al. 2017\n"
            "- \\+1\n- \\[r]: javascript:alert(1)\n- \\# after spaces\n- code?\n- \\---\n- \\<42@example.com>\n");
  // LaTeX: a cell that starts with [ after \\ (read as its optional length) gets {} first; < > | as text commands.
  TextTable l;
  l.header = {"cut"};
  l.rows = {{"[32, 64]"}, {"<b>|x"}};
  EXPECT_NE(render(l, Format::latex).find("\\midrule\n{}[32, 64] \\\\\n\\textless{}b\\textgreater{}\\textbar{}x \\\\\n"),
            std::string::npos)
      << render(l, Format::latex);
  // A * after \\ (\\* is the starred form, which ate it), the fonts' ligatures (dashes, curly quotes, inverted
  // marks) broken with {}, a control character as its code (LaTeX stops at it), a tab as a space.
  TextTable g;
  g.header = {"key"};
  g.rows = {{"first"}, {"*star"}, {"a--b c---d ``q'' ?` !` ,,"}, {std::string("x\x01y\tz")}};
  EXPECT_NE(render(g, Format::latex).find("first \\\\\n{}*star \\\\\na-{}-b c-{}-{}-d `{}`q'{}' ?{}` !{}` ,{}, \\\\\n"
                                          "x\\textbackslash{}x01y z \\\\\n"),
            std::string::npos)
      << render(g, Format::latex);
  TextTable c;
  c.header = {"cell"};
  c.rows = {{"=SUM(A1:A9)"}, {"+cmd|' /C calc'!A0"}, {"-2+3"}, {"@SUM(1)"}, {"\tx"}, {"-0.5"}, {"+1e3"}, {"-inf"},
            {"-"}, {"run-1"}, {"-0x1p3"}, {"-nan(x)"}, {"\t-1"}, {"-O3"}, {"+nan"}, {"-1.5e-3"}, {"-.5"}, {"-1e"}};
  EXPECT_EQ(render(c, Format::csv),
            "cell\r\n'=SUM(A1:A9)\r\n'+cmd|' /C calc'!A0\r\n'-2+3\r\n'@SUM(1)\r\n'\tx\r\n-0.5\r\n+1e3\r\n-inf\r\n-\r\n"
            "run-1\r\n'-0x1p3\r\n'-nan(x)\r\n'\t-1\r\n'-O3\r\n+nan\r\n-1.5e-3\r\n-.5\r\n'-1e\r\n");
}

TEST(TextTable, Numbers) {
  EXPECT_EQ(format_number(1234.5678), "1235");
  EXPECT_EQ(format_number(12345.6), "12346");
  EXPECT_EQ(format_number(75.29), "75.29");
  EXPECT_EQ(format_number(0.000123456), "0.0001235");
  EXPECT_EQ(format_number(100), "100");
}

// A key cell: a text shows as itself unless it reads as another value (found by a hunt: the string "0" and the
// number 0 gave two rows that looked alike).
TEST(TextTable, KeyCellsTellTextsFromNumbers) {
  EXPECT_EQ(json_cell(Json("ring")), "ring");
  EXPECT_EQ(json_cell(Json(0)), "0");
  EXPECT_EQ(json_cell(Json("0")), "\"0\"");
  EXPECT_EQ(json_cell(Json("true")), "\"true\"");
  EXPECT_EQ(json_cell(Json("-")), "\"-\"");  // "-" is the cell of a missing key
  EXPECT_EQ(json_cell(Json("\"0\"")), "\"\\\"0\\\"\"");  // a text holding quotes is not the text "0"
  EXPECT_EQ(json_cell(Json(nullptr)), "-");
  EXPECT_EQ(json_cell(Json("1e999")), "1e999");  // no JSON value: a text
  // A float key as short as it reads back exactly: two momenta near 1 are two labels, neither of them "1".
  EXPECT_EQ(key_cell(Json(0.99999)), "0.99999");
  EXPECT_EQ(key_cell(Json(0.99995)), "0.99995");
  EXPECT_EQ(key_cell(Json(0.12345678)), "0.12345678");
  EXPECT_EQ(key_cell(Json(12345.5)), "12345.5");
  EXPECT_EQ(key_cell(Json(0.1)), "0.1");
  EXPECT_EQ(key_cell(Json(2.0)), "2");
  EXPECT_EQ(key_cell(Json(3e-4)), "0.0003");
  EXPECT_EQ(key_cell(Json{{"name", "sgd"}, {"momentum", 0.99999}}), "sgd momentum=0.99999");
  EXPECT_EQ(key_cell(Json("0")), "\"0\"");
  // A value cell (a population member's hyperparameter) keeps 4 digits.
  EXPECT_EQ(json_cell(Json(0.1071139400362408)), "0.1071");
}

namespace {

// A campaign written by the sweep code (2 reducers x 1 or 2 nodes, 2 repeats), with records whose
// metrics are chosen so every cell has a hand-computed value.
struct Synthetic {
  fs::path dir;
  Synthetic() {
    dir = fs::temp_directory_path() / ("dtbench-table-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    Json doc = {{"name", "synthetic"},
                {"base", {{"duration", {{"steps", 10}}}, {"eval", {{"target_accuracy", 0.5}}}}},
                {"axes", {{"reducer.name", {"ring", "tree"}}, {"slurm.nodes", {1, 2}}}},
                {"repeats", 2}};
    auto spec = dtbench::slurm::parse_spec(doc, ".");
    auto layout = dtbench::slurm::make_layout(dir, {"dtbench", "train"}, "test");
    auto points = dtbench::slurm::expand(spec, layout.runs);
    dtbench::slurm::write_campaign(spec, points, layout, false);
    // ring/1 node: throughput 100 and 120; tta reached once (12 s, epoch 0.5, step 5).
    write(points[0].runs[0], dtbench::RunStatus::reached_target, 100, true);
    write(points[0].runs[1], dtbench::RunStatus::completed, 120, false);
    // ring/2 nodes: 180 and 200.
    write(points[1].runs[0], dtbench::RunStatus::completed, 180, false);
    write(points[1].runs[1], dtbench::RunStatus::completed, 200, false);
    // tree/1 node: one done (90), one failed.
    write(points[2].runs[0], dtbench::RunStatus::completed, 90, false);
    write(points[2].runs[1], dtbench::RunStatus::failed, 0, false);
    // tree/2 nodes: no records at all.
  }
  ~Synthetic() { fs::remove_all(dir); }
  void write(const dtbench::slurm::Run& run, dtbench::RunStatus status, double ips, bool reached) {
    dtbench::RunRecord r;
    r.name = run.name;
    r.config = run.config;
    r.ranks = run.name.find("nodes2") != std::string::npos ? 2 : 1;
    r.global_batch = 64, r.per_rank_batch = 64 / r.ranks;
    r.status = status;
    r.images_per_second = ips;
    if (ips >= 100) r.steady_images_per_second = ips + 10;  // the tree run (90) had no second step
    r.timing.exposed_comm = 0.01;
    r.timing.total = 0.1;
    r.target_accuracy = 0.5;
    dtbench::EvalPoint p;
    p.test_accuracy = reached ? 0.8 : 0.4;  // below the target when it did not reach it, as a record must be
    p.b_simple = 512;
    if (reached) {  // at the curve's one point, as the trainer writes it: 10 steps of 64 samples
      r.time_to_accuracy = dtbench::TimeToAccuracy{12, 10, 0.5, 640};
      p.wall_seconds = 12, p.step = 10, p.epoch = 0.5, p.samples = 640;
      r.steps = 10;  // its last evaluation is at its last step
    }
    r.curve = {p};
    dtbench::write_json_atomic(dir / "runs" / (run.name + ".json"), r.to_json(), false);
  }
};

}  // namespace

TEST(CampaignTable, EveryPointWithMedianMinMaxAndNothingDropped) {
  Synthetic s;
  CampaignData c = load_campaign(s.dir);
  ASSERT_EQ(c.points.size(), 4u);
  EXPECT_EQ(c.keys, (std::vector<std::string>{"reducer.name", "slurm.nodes"}));
  TextTable t = campaign_table(c, {}, Format::md);
  EXPECT_EQ(t.header, (std::vector<std::string>{"reducer.name", "slurm.nodes", "ranks", "runs", "throughput (img/s)",
                                                "time to target (s)", "epochs to target", "final accuracy (%)",
                                                "scaling efficiency (%)", "exposed comm (% of step)",
                                                "B_simple (samples)"}));
  ASSERT_EQ(t.rows.size(), 4u);
  // ring, 1 node: median of 100 and 120; the target reached by one of two runs.
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"ring", "1", "1", "2/2 done", "110 [100, 120]", "12 (1/2 reached)",
                                                 "0.5 (1/2 reached)", "60 [40, 80]", "100", "10 [10, 10]",
                                                 "512 [512, 512]"}));
  // ring, 2 nodes: efficiency (190 / 2) / (110 / 1) = 86.36%.
  EXPECT_EQ(t.rows[1][4], "190 [180, 200]");
  EXPECT_EQ(t.rows[1][5], "not reached");
  EXPECT_EQ(t.rows[1][8], "86.36");
  // tree, 1 node: the failed run is counted, not averaged.
  EXPECT_EQ(t.rows[2][3], "1/2 done, 1 failed");
  EXPECT_EQ(t.rows[2][4], "90");
  // tree, 2 nodes: no records, still a row.
  EXPECT_EQ(t.rows[3], (std::vector<std::string>{"tree", "2", "2", "0/2 done, 2 missing", "-", "-", "-", "-", "-", "-", "-"}));
  EXPECT_EQ(t.notes.size(), 1u);

  // CSV: separate median/min/max/n columns.
  TextTable csv = campaign_table(c, {{}, {"throughput"}}, Format::csv);
  EXPECT_EQ(csv.header, (std::vector<std::string>{"reducer.name", "slurm.nodes", "ranks", "runs", "throughput_median",
                                                  "throughput_min", "throughput_max", "throughput_n"}));
  EXPECT_EQ(csv.rows[1], (std::vector<std::string>{"ring", "2", "2", "2/2 done", "190", "180", "200", "2"}));
  EXPECT_EQ(csv.rows[3], (std::vector<std::string>{"tree", "2", "2", "0/2 done, 2 missing", "", "", "", "0"}));
  // Whole numbers, for the programs that read CSV (4 digits cut 12,345,678 to 1.235e+07; a hunt).
  EXPECT_EQ(dtbench::analysis::exact_number(12345678), "12345678");
  EXPECT_EQ(dtbench::analysis::exact_number(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(dtbench::analysis::exact_number(std::nan("")), "nan");

  // The steady-state throughput; a run without one (tree, 1 node) gives no value rather than a zero.
  TextTable steady = campaign_table(c, {{}, {"steady_throughput"}}, Format::md);
  EXPECT_EQ(steady.header.back(), "steady throughput (img/s)");
  EXPECT_EQ(steady.rows[0].back(), "120 [110, 130]");
  EXPECT_EQ(steady.rows[1].back(), "200 [190, 210]");
  EXPECT_EQ(steady.rows[2].back(), "-");

  // Grouped by reducer: runs of both node counts in one row.
  TextTable g = campaign_table(c, {{"reducer.name"}, {"throughput"}}, Format::md);
  ASSERT_EQ(g.rows.size(), 2u);
  EXPECT_EQ(g.rows[0], (std::vector<std::string>{"ring", "1,2", "4/4 done", "150 [100, 200]"}));
  EXPECT_EQ(g.rows[1], (std::vector<std::string>{"tree", "1,2", "1/4 done, 1 failed, 2 missing", "90"}));
  // Grouped by global_batch: the runs without a record take theirs from their config (the records here say 64, the
  // configs the default 128). They were pooled in a row "-" and the others looked complete (a hunt).
  TextTable b = campaign_table(c, {{"global_batch"}, {"throughput"}}, Format::md);
  ASSERT_EQ(b.rows.size(), 2u);
  EXPECT_EQ(b.rows[0], (std::vector<std::string>{"64", "1,2", "5/6 done, 1 failed", "120 [90, 200]"}));
  EXPECT_EQ(b.rows[1], (std::vector<std::string>{"128", "2", "0/2 done, 2 missing", "-"}));
  EXPECT_THROW(campaign_table(c, {{}, {"speed"}}, Format::md), dtbench::BadInput);
}

// A diverged run counts in every metric with a final accuracy of 0, as the reproduction report counts it (the table
// showed its last accuracy before the divergence; found by a hunt), and the runs column says it diverged.
TEST(CampaignTable, ADivergedRunsFinalAccuracyIsZeroAndSaid) {
  Synthetic s;
  for (const auto& e : fs::directory_iterator(s.dir / "runs")) {
    if (e.path().filename().string().find("p0-ring-nodes1-s1") == std::string::npos) continue;
    dtbench::RunRecord r = *dtbench::read_run_record(e.path()).record;
    r.status = dtbench::RunStatus::diverged;
    r.time_to_accuracy.reset();
    dtbench::write_json_atomic(e.path(), r.to_json(), false);
  }
  TextTable t = campaign_table(load_campaign(s.dir), {{}, {"final_accuracy"}}, Format::md);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"ring", "1", "1", "2/2 done (1 diverged)", "20 [0, 40]"}));
}

// A run ended by `train --stop-at` before its config's last step is a part of that run: counted as stopped, in no
// metric (a table took the median of an 8-step and a 40-step run as "2/2 done"; a hunt). One stopped at its last
// step, or ended by its target before the stop, is done.
TEST(CampaignTable, ARunStoppedBeforeItsLastStepIsNotDone) {
  Synthetic s;
  const auto edit = [&](const std::string& run, int64_t stop_at, int64_t steps) {
    for (const auto& e : fs::directory_iterator(s.dir / "runs")) {
      if (e.path().filename().string().find(run) == std::string::npos) continue;
      dtbench::RunRecord r = *dtbench::read_run_record(e.path()).record;
      r.extra["stop_at"] = stop_at;
      r.extra["total_steps"] = 40;
      r.steps = steps;
      if (!r.time_to_accuracy) r.curve.back().step = steps, r.curve.back().samples = steps * r.global_batch;
      dtbench::write_json_atomic(e.path(), r.to_json(), false);
    }
  };
  edit("p0-ring-nodes1-s1", 8, 8);   // stopped at step 8 of 40
  edit("p1-ring-nodes2-s1", 40, 40);  // "stopped" at its last step: done
  edit("p1-ring-nodes2-s2", 20, 12);  // ended by its target at step 12, before the stop at 20: done
  TextTable t = campaign_table(load_campaign(s.dir), {{}, {"throughput"}}, Format::md);
  EXPECT_EQ(t.rows[0][3], "1/2 done, 1 stopped");
  EXPECT_EQ(t.rows[0][4], "120");  // the done run's alone
  EXPECT_EQ(t.rows[1][3], "2/2 done");
  // A row of stopped runs only (population-based training members' records so far): their values, said so.
  edit("p0-ring-nodes1-s2", 8, 8);
  t = campaign_table(load_campaign(s.dir), {{}, {"throughput"}}, Format::md);
  EXPECT_EQ(t.rows[0][3], "0/2 done, 2 stopped (the values are the stopped runs')");
  EXPECT_EQ(t.rows[0][4], "110 [100, 120]");
}

// Scaling efficiency compares rows that agree on every key but the rank count's: a key zipped with the rank count
// moves with it only when it has one value per rank count (here the per-rank batch); a thread count zipped beside it
// (1 and 2 at one rank) must agree. The row of 1 rank and 2 threads was given 69% against the 1-thread row (found by
// a hunt); now it has no smaller rank count to compare with, and 2 ranks compare with 1 rank of 1 thread.
TEST(CampaignTable, ScalingEfficiencyComparesOnlyWhatMovesWithTheRankCount) {
  const fs::path dir = fs::temp_directory_path() / ("dtbench-table-zip-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Json doc = {{"name", "zip"},
              {"base", {{"duration", {{"steps", 10}}}}},
              {"zip", Json::array({{{"slurm.tasks_per_node", {1, 1, 2}}, {"threads", {1, 2, 1}},
                                    {"batch.per_rank", {64, 64, 32}}}})}};
  auto spec = dtbench::slurm::parse_spec(doc, ".");
  auto layout = dtbench::slurm::make_layout(dir, {"dtbench", "train"}, "test");
  auto points = dtbench::slurm::expand(spec, layout.runs);
  dtbench::slurm::write_campaign(spec, points, layout, false);
  const double ips[] = {100, 70, 150};
  for (size_t i = 0; i < points.size(); ++i) {
    dtbench::RunRecord r;
    r.name = points[i].runs[0].name;
    r.config = points[i].runs[0].config;
    r.ranks = static_cast<int>(points[i].ranks);
    r.global_batch = 64, r.per_rank_batch = 64 / r.ranks;
    r.status = dtbench::RunStatus::completed;
    r.images_per_second = ips[i];
    dtbench::write_json_atomic(dir / "runs" / (r.name + ".json"), r.to_json(), false);
  }
  TextTable t = campaign_table(load_campaign(dir), {{}, {"scaling_efficiency"}}, Format::md);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0].back(), "100");  // 1 rank, 1 thread: the baseline of the 2-rank row
  EXPECT_EQ(t.rows[1].back(), "-");    // 1 rank, 2 threads: no other rank count with 2 threads
  EXPECT_EQ(t.rows[2].back(), "75");   // (150 / 2) / (100 / 1)
  fs::remove_all(dir);
}

TEST(CampaignTable, AFolderOfRecordsWithoutCampaignIndex) {
  Synthetic s;
  fs::remove(s.dir / "campaign.json");
  CampaignData c = load_campaign(s.dir / "runs");
  // Keys found from what differs between the records: the reducer and the rank count.
  EXPECT_EQ(c.keys, (std::vector<std::string>{"reducer.name", "ranks"}));
  TextTable t = campaign_table(c, {{}, {"throughput"}}, Format::md);
  // The rank count is a key here: shown once, not in a second "ranks" column (CSV readers take the first of two).
  EXPECT_EQ(t.header, (std::vector<std::string>{"reducer.name", "ranks", "runs", "throughput (img/s)"}));
  EXPECT_EQ(t.right, (std::vector<bool>{false, true, false, true}));  // numbers right, the runs text left
  ASSERT_EQ(t.rows.size(), 3u);  // tree/2 has no records, so nothing can show it here
  EXPECT_EQ(t.rows[0][0], "ring");
  EXPECT_EQ(t.rows[0][3], "110 [100, 120]");
  EXPECT_EQ(t.rows[2][2], "1/2 done, 1 failed");
  EXPECT_THROW(load_campaign(s.dir / "configs"), dtbench::BadInput);  // configs are not records
}

TEST(CampaignTable, AFolderScanSkipsTheSweepsFailedFolderUnlessItIsTheOneGiven) {
  Synthetic s;
  fs::remove(s.dir / "campaign.json");
  const fs::path runs = s.dir / "runs";
  // The sweep moves a failed run's record aside (runs/failed/) so a rerun redoes it: beneath the folder given it is
  // not a run of the campaign; given itself, its records are what the user asked for (it printed nothing before).
  fs::create_directories(runs / "failed");
  const fs::path moved = runs / "failed" / "ring-nodes1-r0.old.json";
  dtbench::RunRecord r = dtbench::RunRecord::from_json(
      dtbench::read_json_file(load_campaign(runs).points[0].runs[0].record_path.string(), "a record"));
  r.name = "moved-aside";
  dtbench::write_json_atomic(moved, r.to_json(), false);
  const CampaignData all = load_campaign(runs);
  size_t n = 0;
  for (const auto& p : all.points) n += p.runs.size();
  EXPECT_EQ(n, 6u);  // the six records of runs/, not the one moved aside
  const CampaignData failed = load_campaign(runs / "failed");
  ASSERT_EQ(failed.points.size(), 1u);
  ASSERT_EQ(failed.points[0].runs.size(), 1u);
  EXPECT_EQ(failed.points[0].runs[0].name, "moved-aside");
}

TEST(CampaignTable, AFolderScanCountsARecordOnceAndNoJsonNameSilently) {
  Synthetic s;
  fs::remove(s.dir / "campaign.json");
  const fs::path runs = s.dir / "runs";
  const CampaignData before = load_campaign(runs);
  const fs::path first = before.points[0].runs[0].record_path;
  // A copy of a record: counted once would be right, twice was what happened (4/4 done with 3 runs); refused.
  fs::copy_file(first, runs / "zz-copy.json");
  try {
    load_campaign(runs);
    FAIL();
  } catch (const dtbench::BadInput& e) {
    EXPECT_EQ(std::string(e.what()), (runs / "zz-copy.json").string() + ": the same record as " + first.string() +
                                         " (run '" + before.points[0].runs[0].name +
                                         "'); a run is counted once: move the copy away");
  }
  fs::remove(runs / "zz-copy.json");
  // A record-named entry that is no file (a pipe, which reading would block on; a link to a device) is unreadable,
  // as a dangling link was, never left out without a word.
  ASSERT_EQ(::mkfifo((runs / "pipe.json").c_str(), 0644), 0);
  fs::create_symlink("/dev/zero", runs / "zero.json");
  const CampaignData c = load_campaign(runs);
  EXPECT_EQ(unreadable_records(c),
            (std::vector<std::string>{
                (runs / "pipe.json").string() + ": not a regular file (a pipe, a device, a socket or a link to a folder)",
                (runs / "zero.json").string() + ": not a regular file (a pipe, a device, a socket or a link to a folder)"}));
}

TEST(CampaignTable, AnUnreadableRecordIsARunOfItsOwnWithItsReason) {
  Synthetic s;
  const CampaignData before = load_campaign(s.dir);
  // ring/1 node: the first record cut short, the second of a later schema (once counted as done).
  const fs::path cut = before.points[0].runs[0].record_path, later = before.points[0].runs[1].record_path;
  dtbench::write_file_atomic(cut, "{\"kind\": \"dtbench-run-record\", \"status\": \"completed\"", false);
  Json j = dtbench::read_run_record(later).record->to_json();
  j["schema_version"] = 2;
  dtbench::write_json_atomic(later, j, false);

  CampaignData c = load_campaign(s.dir);
  EXPECT_EQ(c.points[0].runs[0].state, "unreadable");
  EXPECT_EQ(c.points[0].runs[0].problem, cut.string() + ":1:53: invalid JSON (byte 52)");
  EXPECT_EQ(c.points[0].runs[0].config["reducer"]["name"], "ring");  // from configs/, for the key columns
  EXPECT_EQ(c.points[0].runs[1].state, "unreadable");
  EXPECT_EQ(c.points[0].runs[1].problem,
            later.string() + ": /schema_version: version 2 is newer than this dtbench reads (1)");
  EXPECT_EQ(c.points[3].runs[0].state, "missing");  // no file at all: missing, not unreadable
  EXPECT_EQ(unreadable_records(c), (std::vector<std::string>{c.points[0].runs[0].problem, c.points[0].runs[1].problem}));

  TextTable t = campaign_table(c, {{}, {"throughput", "scaling_efficiency"}}, Format::md);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"ring", "1", "1", "0/2 done, 2 unreadable", "-", "-"}));
  // ring/2 nodes has no readable row of fewer ranks to compare with any more.
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"ring", "2", "2", "2/2 done", "190 [180, 200]", "-"}));
  ASSERT_EQ(t.notes.size(), 2u);
  EXPECT_EQ(t.notes[0], "Unreadable record (in no metric): " + c.points[0].runs[0].problem);
  EXPECT_EQ(t.notes[1], "Unreadable record (in no metric): " + c.points[0].runs[1].problem);
}

// The scaling efficiency's baseline is the group's smallest rank count, done or not: with every run at K = 1 failed,
// K = 2 became the baseline unsaid and read 100%, K = 4 was measured against it, and the note still said "K0 = the
// smallest rank count" (found by a hunt). Now the group has no efficiency.
TEST(CampaignTable, NoEfficiencyWhenTheSmallestRankCountHasNoFinishedRun) {
  const fs::path dir = fs::temp_directory_path() / ("dtbench-table-k0-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Json doc = {{"name", "k0"}, {"base", {{"duration", {{"steps", 10}}}}}, {"axes", {{"slurm.nodes", {1, 2, 4}}}}};
  auto spec = dtbench::slurm::parse_spec(doc, ".");
  auto layout = dtbench::slurm::make_layout(dir, {"dtbench", "train"}, "test");
  auto points = dtbench::slurm::expand(spec, layout.runs);
  dtbench::slurm::write_campaign(spec, points, layout, false);
  const auto write = [&](const dtbench::slurm::Run& run, int ranks, dtbench::RunStatus status, double ips,
                         int64_t steps = 10, int64_t stop_at = 0) {
    dtbench::RunRecord r;
    r.name = run.name, r.config = run.config, r.ranks = ranks;
    r.global_batch = 64, r.per_rank_batch = 64 / ranks;
    r.status = status, r.images_per_second = ips, r.steps = steps;
    if (stop_at > 0) r.extra = {{"stop_at", stop_at}, {"total_steps", 10}};
    dtbench::write_json_atomic(dir / "runs" / (run.name + ".json"), r.to_json(), false);
  };
  write(points[1].runs[0], 2, dtbench::RunStatus::completed, 200);
  write(points[2].runs[0], 4, dtbench::RunStatus::completed, 300);
  const auto efficiency = [&] {
    TextTable t = campaign_table(load_campaign(dir), {{}, {"throughput", "scaling_efficiency"}}, Format::md);
    std::vector<std::string> e;
    for (const auto& row : t.rows) e.push_back(row.back());
    return e;
  };
  EXPECT_EQ(efficiency(), (std::vector<std::string>{"-", "-", "-"}));  // K = 1 has no record: missing
  write(points[0].runs[0], 1, dtbench::RunStatus::failed, 0);
  EXPECT_EQ(efficiency(), (std::vector<std::string>{"-", "-", "-"}));  // failed
  // Stopped at step 2 of 10 (train --stop-at): a part of the run, no baseline for finished ones (K = 2 read 178%
  // against such a row; a hunt). The row still shows its own throughput, marked as the stopped runs'.
  write(points[0].runs[0], 1, dtbench::RunStatus::completed, 100, 2, 2);
  EXPECT_EQ(efficiency(), (std::vector<std::string>{"-", "-", "-"}));
  // Diverged before its first step: no throughput measured, not 0 img/s (a row read 0% and another 170%; a hunt).
  write(points[0].runs[0], 1, dtbench::RunStatus::diverged, 0, 0);
  EXPECT_EQ(efficiency(), (std::vector<std::string>{"-", "-", "-"}));
  {
    TextTable t = campaign_table(load_campaign(dir), {{}, {"throughput", "scaling_efficiency"}}, Format::md);
    EXPECT_EQ(t.rows[0][t.rows[0].size() - 2], "-");
  }
  write(points[0].runs[0], 1, dtbench::RunStatus::completed, 100);
  EXPECT_EQ(efficiency(), (std::vector<std::string>{"100", "100", "75"}));  // against K = 1: (300 / 4) / 100
  fs::remove_all(dir);
}

// A run's config file that is there but is no config: the run is unreadable, naming the file, whether its record is
// there or not. It was taken as gone, so a record of another config counted for the run (found by a hunt). A config
// file that is gone still leaves the record checked against the index's values (and counted).
TEST(CampaignTable, ADamagedConfigFileMakesItsRunUnreadable) {
  Synthetic s;
  const dtbench::CampaignIndex idx = dtbench::read_campaign_index(s.dir / "campaign.json");
  const fs::path cut = s.dir / idx.points[1].runs[0].config, list = s.dir / idx.points[1].runs[1].config;
  const fs::path no_record = s.dir / idx.points[3].runs[0].config, gone = s.dir / idx.points[0].runs[1].config;
  const fs::path emptied = s.dir / idx.points[2].runs[0].config;
  dtbench::write_file_atomic(cut, "{\"model\": {\"arch\"", false);
  dtbench::write_file_atomic(list, "[]", false);
  dtbench::write_file_atomic(emptied, "{}", false);  // no config either: it let any record of the point's values count
  dtbench::write_file_atomic(no_record, "{\"model\": {\"arch\"", false);
  fs::remove(gone);

  const CampaignData c = load_campaign(s.dir);
  EXPECT_EQ(c.points[1].runs[0].state, "unreadable");
  EXPECT_EQ(c.points[1].runs[0].problem, cut.string() + ":1:18: invalid JSON (byte 17); the run's record cannot be "
                                                         "checked against its config");
  EXPECT_EQ(c.points[1].runs[1].state, "unreadable");
  EXPECT_EQ(c.points[1].runs[1].problem, list.string() + ": the run's config is not a JSON object; the run's record "
                                                          "cannot be checked against its config");
  EXPECT_EQ(c.points[2].runs[0].state, "unreadable");
  EXPECT_EQ(c.points[2].runs[0].problem, emptied.string() + ": the run's config is an empty object; the run's record "
                                                             "cannot be checked against its config");
  EXPECT_EQ(c.points[3].runs[0].state, "unreadable");  // no record either: the damage is said, not "missing"
  EXPECT_EQ(c.points[0].runs[1].state, "done");        // its config file gone: checked against the index
  EXPECT_EQ(c.points[0].runs[0].state, "done");
}

// What plot.py reads (table --format json): every run of every point, each readable record as RunRecord writes it,
// and the unreadable ones with their reasons, in the table's order.
TEST(CampaignTable, CampaignJsonHoldsEveryRunAsRead) {
  Synthetic s;
  const CampaignData before = load_campaign(s.dir);
  const fs::path cut = before.points[0].runs[0].record_path;
  dtbench::write_file_atomic(cut, "{\"kind\": \"dtbench-run-record\"", false);
  const CampaignData c = load_campaign(s.dir);
  const Json j = dtbench::analysis::campaign_json(c);
  EXPECT_EQ(j["kind"], "dtbench-campaign-data");
  EXPECT_EQ(j["keys"], Json(c.keys));
  ASSERT_EQ(j["points"].size(), c.points.size());
  EXPECT_EQ(j["points"][0]["values"]["reducer.name"], "ring");
  EXPECT_EQ(j["points"][0]["runs"][0]["state"], "unreadable");
  EXPECT_TRUE(j["points"][0]["runs"][0]["record"].is_null());
  EXPECT_EQ(j["unreadable"], Json(std::vector<std::string>{c.points[0].runs[0].problem}));
  EXPECT_EQ(j["points"][0]["runs"][1]["record"], c.points[0].runs[1].record->to_json());
  EXPECT_EQ(j["points"][3]["runs"][0]["state"], "missing");  // tree/2 nodes: no record, still listed
  // Each run's batch as --group-by takes it: the record's, else its config's (here the default 128), for plot.py.
  EXPECT_EQ(j["points"][0]["runs"][1]["global_batch"], 64);
  EXPECT_EQ(j["points"][3]["runs"][0]["global_batch"], 128);
  EXPECT_EQ(j["points"][3]["runs"][0]["per_rank_batch"], 64);
}

TEST(CampaignTable, UnreadableRecordsOutsideACampaignFormARowOfTheirOwn) {
  Synthetic s;
  fs::remove(s.dir / "campaign.json");
  const fs::path runs = s.dir / "runs";
  dtbench::write_file_atomic(runs / "cut.json", "{\"kind\": \"dtbench-run-record\"", false);
  dtbench::write_file_atomic(runs / "nan.json", "{\"kind\": \"dtbench-run-record\", \"ranks\": NaN}", false);
  dtbench::write_file_atomic(runs / "notes.json", "{\"seed\": 1}", false);  // JSON of another kind: no record
  CampaignData c = load_campaign(runs);
  ASSERT_EQ(c.points.size(), 4u);
  EXPECT_EQ(c.points[3].id, "unreadable");
  ASSERT_EQ(c.points[3].runs.size(), 2u);
  EXPECT_EQ(c.points[3].runs[0].problem, (runs / "cut.json").string() + ":1:30: invalid JSON (byte 29)");
  EXPECT_EQ(c.points[3].runs[1].problem, (runs / "nan.json").string() + ":1:41: invalid JSON (byte 40)");
  TextTable t = campaign_table(c, {{}, {"throughput"}}, Format::md);
  ASSERT_EQ(t.rows.size(), 4u);
  // No config and no rank count to show: the key cells are empty, the runs cell says why.
  EXPECT_EQ(t.rows[3], (std::vector<std::string>{"-", "-", "0/2 done, 2 unreadable", "-"}));
  EXPECT_EQ(t.rows[0][3], "110 [100, 120]");  // the readable records as before

  // One record file given alone.
  c = load_campaign(runs / "cut.json");
  ASSERT_EQ(c.points.size(), 1u);
  EXPECT_EQ(c.points[0].runs[0].state, "unreadable");
  // Nothing that even looks like a record: bad input.
  try {
    load_campaign(s.dir / "configs");
    FAIL();
  } catch (const dtbench::BadInput& e) {
    EXPECT_EQ(std::string(e.what()), (s.dir / "configs").string() + ": no campaign.json and no run records here");
  }
}

TEST(CampaignTable, ACampaignIndexOfTheWrongShapeNamesFileAndPointer) {
  Synthetic s;
  const fs::path index = s.dir / "campaign.json";
  auto problem = [&](const std::function<void(Json&)>& change) {
    Json j = dtbench::read_json_file(index.string(), "campaign index");
    change(j);
    dtbench::write_json_atomic(s.dir / "bad" / "campaign.json", j, false);
    try {
      load_campaign(s.dir / "bad");
      return std::string();
    } catch (const dtbench::BadInput& e) {
      return std::string(e.what());
    }
  };
  fs::create_directories(s.dir / "bad");
  const std::string where = (s.dir / "bad" / "campaign.json").string() + ": ";
  // Points of empty objects once crashed `dtbench table`.
  EXPECT_EQ(problem([](Json& j) { j["points"] = Json::array({Json::object()}); }), where + "/points/0/id: missing");
  EXPECT_EQ(problem([](Json& j) { j["points"][2]["ranks"] = -5; }),
            where + "/points/2/ranks: expected an integer from 1 to 2147483647, got -5");
  EXPECT_EQ(problem([](Json& j) { j["points"][0]["runs"] = "runs/"; }),
            where + "/points/0/runs: expected a list, got \"runs/\"");
  EXPECT_EQ(problem([](Json&) {}), "");
}

TEST(Published, MlperfReferenceConvergencePointsMatchTheReferences) {
  Json doc = load_published("mlperf-resnet-rcp");
  TextTable t = published_table(doc, Format::md);
  // Mean epochs to 75.9% per batch size as listed in shared/REFERENCES.md (rounded there to 0.1).
  std::vector<std::pair<std::string, std::string>> want = {
      {"1,632", "35.0"},  {"3,264", "35.2"},  {"4,096", "40.0"},  {"8,192", "42.0"},  {"13,056", "45.4"},
      {"32,768", "56.0"}, {"49,152", "68.0"}, {"58,880", "79.9"}, {"65,536", "84.5"}, {"67,840", "85.9"}};
  ASSERT_EQ(t.rows.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(t.rows[i][0], want[i].first);
    EXPECT_EQ(t.rows[i][1], want[i].second) << want[i].first;
  }
  EXPECT_EQ(t.rows[0][4], "17");  // runs at batch 1632
  EXPECT_EQ(t.rows[9][4], "28");
  EXPECT_EQ(t.header.back(), "Source");
  EXPECT_EQ(published_table(doc, Format::csv).rows[0][0], "1632");  // no thousands separators in CSV
  EXPECT_NE(t.notes.back().find("rcps_resnet.json"), std::string::npos);
  // The mean of figures near DBL_MAX is theirs, not inf (their sum overflowed; a hunt).
  doc["rows"][0]["epochs"] = Json::array({1e308, 1e308});
  const TextTable big = published_table(doc, Format::csv);
  EXPECT_EQ(std::stod(big.rows[0][1]), 1e308) << big.rows[0][1];
}

TEST(Published, ImagenetTableIsTheSeedsAndConsistent) {
  Json doc = load_published("imagenet-resnet50");
  std::string md = render(published_table(doc, Format::md), Format::md);
  // The optimizer column is the seed's second table's (shared/seeds/001); rows it lacks stay blank.
  EXPECT_NE(md.find("| Work | Batch size | Processors | DL library | Optimizer | Time |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Goyal et al. 2017 | 8,192 | Tesla P100 × 256 | Caffe2 | SGD | 1 h | 76.3 | 14,076 | 0.255 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| Akiba et al. 2017 | 32,768 | Tesla P100 × 1,024 | Chainer | RMSprop/SGD | 15 min |"),
            std::string::npos);
  EXPECT_NE(md.find("| He et al. 2016 | 256 | Tesla P100 × 8 | Caffe |  | 29 h |"), std::string::npos);
  EXPECT_NE(md.find("| Yamazaki et al. 2019 | 81,920 | Tesla V100 × 2,048 | MXNet | SGD | 1.2 min | 75.08 |"),
            std::string::npos);
  size_t with_optimizer = 0;
  for (const auto& r : doc["rows"]) with_optimizer += r.contains("optimizer");
  EXPECT_EQ(with_optimizer, 8u);  // the eight rows of the seed's second table
  EXPECT_NE(md.find("8,192 → 16,384"), std::string::npos);
  // Steps x time per step gives the time column (the seed's second table), within 10%.
  size_t with_steps = 0;
  for (const auto& r : doc["rows"]) {
    if (!r.contains("steps")) continue;
    ++with_steps;
    double minutes = r["steps"].get<double>() * r["seconds_per_step"].get<double>() / 60;
    EXPECT_NEAR(minutes / r["minutes"].get<double>(), 1.0, 0.1) << r["work"];
  }
  EXPECT_EQ(with_steps, 8u);
  std::string tex = render(published_table(doc, Format::latex), Format::latex);
  EXPECT_NE(tex.find("8,192 $\\rightarrow$ 16,384"), std::string::npos);
  EXPECT_NE(tex.find("Tesla P100 $\\times$ 256"), std::string::npos);
}

TEST(Published, ErrorsNameTheTableOrTheKey) {
  try {
    load_published("nope");
    FAIL();
  } catch (const dtbench::BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("--published nope: no such table; tables in "), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("imagenet-resnet50, mlperf-resnet-rcp"), std::string::npos);
  }
  Json bad = load_published("mlperf-resnet-rcp");
  bad["rows"][2]["epochs"] = "forty";
  try {
    check_published(bad);
    FAIL();
  } catch (const dtbench::BadInput& e) {
    EXPECT_STREQ(e.what(), "/rows/2/epochs: expected a non-empty list of numbers");
  }
  auto problem = [](const std::function<void(Json&)>& change) {
    Json doc = load_published("mlperf-resnet-rcp");
    change(doc);
    try {
      check_published(doc);
      return std::string();
    } catch (const dtbench::BadInput& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(problem([](Json& d) { d["rows"][0]["refs"] = {"nobody"}; }),
            "/rows/0/refs: unknown reference \"nobody\" (not in /references)");
  EXPECT_EQ(problem([](Json& d) { d["rows"][0]["refs"] = "mlperf"; }), "/rows/0/refs: expected a list, got \"mlperf\"");
  EXPECT_EQ(problem([](Json& d) { d["columns"][1]["digits"] = "1"; }), "/columns/1/digits: expected an integer, got \"1\"");
  EXPECT_EQ(problem([](Json& d) { d["columns"][1]["digits"] = 1000; }),
            "/columns/1/digits: expected an integer from 0 to 17, got 1000");
  EXPECT_EQ(problem([](Json& d) { d["columns"][0]["align"] = "centre"; }),
            "/columns/0/align: expected \"left\" or \"right\"");
  EXPECT_EQ(problem([](Json& d) { d["columns"] = Json::array({Json::object()}); }), "/columns/0/label: missing");
  EXPECT_EQ(problem([](Json& d) { d["columns"] = Json::array(); }), "/columns: expected a non-empty list");
  EXPECT_EQ(problem([](Json& d) { d["rows"] = Json::array({Json::array({1})}); }), "/rows/0: expected an object, got [1]");
  EXPECT_EQ(problem([](Json& d) { d["rows"][0]["batch"] = Json::object(); }),
            "/rows/0/batch: expected a text or a number, got {}");
  EXPECT_EQ(problem([](Json& d) { d["kind"] = 5; }), "/kind: expected a string, got 5");
  EXPECT_EQ(problem([](Json& d) { d["notes"] = {5}; }), "/notes/0: expected a string, got 5");
  EXPECT_EQ(problem([](Json& d) { d["references"]["rcp"] = 5; }), "/references/rcp: expected a string, got 5");
  EXPECT_EQ(problem([](Json& d) { d["surprise"] = 1; }), "/surprise: unexpected field");
  EXPECT_EQ(problem([](Json&) {}), "");
}

// MLPerf reference convergence points: per global batch, the epochs to the target of the runs that reached
// it (sorted), at least 3 of them; a point with fewer is left out with the reason.
TEST(MlperfRcp, EpochsToTargetPerGlobalBatch) {
  const fs::path dir = fs::temp_directory_path() / ("dtbench-rcp-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Json doc = {{"name", "rcp"},
              {"base", {{"duration", {{"steps", 10}}}, {"eval", {{"target_accuracy", 0.9}}},
                        {"optimizer", {{"name", "sgd"}, {"lr", 0.1}, {"momentum", 0.9}}},
                        {"lr_scaling", {{"rule", "linear"}, {"reference_batch", 64}}},
                        {"schedule", {{"warmup", {{"steps", 3}}}}}}},
              {"axes", {{"batch.global", {128, 256}}}},
              {"repeats", 4}};
  auto spec = dtbench::slurm::parse_spec(doc, ".");
  auto layout = dtbench::slurm::make_layout(dir, {"dtbench", "train"}, "test");
  auto points = dtbench::slurm::expand(spec, layout.runs);
  dtbench::slurm::write_campaign(spec, points, layout, false);
  auto write = [&](const dtbench::slurm::Run& run, int64_t batch, std::optional<double> epoch) {
    dtbench::RunRecord r;
    r.name = run.name;
    r.config = run.config;
    r.global_batch = batch, r.per_rank_batch = batch;
    r.status = epoch ? dtbench::RunStatus::reached_target : dtbench::RunStatus::completed;
    r.target_accuracy = run.config["eval"].value("target_accuracy", 0.9);  // the config's, as the trainer records it
    r.finished_utc = "2026-11-25T23:00:00Z";
    r.provenance = {{"cpu", {{"model", "AMD EPYC"}}}};
    r.extra["peak_lr"] = 0.1 * static_cast<double>(batch) / 64;  // what the trainer records: linear from 64
    r.extra["steps_per_epoch"] = 7;
    r.extra["warmup_steps"] = 2;  // the schedule's warmup steps, as the trainer records them
    if (epoch) {  // the point it names, as the trainer writes it
      r.time_to_accuracy = dtbench::TimeToAccuracy{10, 5, *epoch, 5 * batch};
      dtbench::EvalPoint p;
      p.wall_seconds = 10, p.step = 5, p.epoch = *epoch, p.samples = 5 * batch, p.test_accuracy = 0.9;
      r.curve = {p};
    }
    dtbench::write_json_atomic(dir / "runs" / (run.name + ".json"), r.to_json(), false);
  };
  const std::optional<double> no;
  write(points[0].runs[0], 128, 3.0);
  write(points[0].runs[1], 128, 2.5);
  write(points[0].runs[2], 128, no);
  write(points[0].runs[3], 128, 3.5);
  write(points[1].runs[0], 256, 4.0);
  write(points[1].runs[1], 256, no);
  write(points[1].runs[2], 256, 5.0);  // the fourth run has no record: missing

  RcpSet set = reference_convergence_points(load_campaign(dir));
  ASSERT_EQ(set.rcps.size(), 1u);
  const Json& ref = set.rcps["resnet_ref_128"];  // resnet20, the default arch: MLPerf's "resnet"
  EXPECT_EQ(ref["Benchmark"], "resnet");
  EXPECT_EQ(ref["BS"], 128);
  EXPECT_EQ(ref["Epochs to converge"], Json({2.5, 3.0, 3.5}));
  EXPECT_EQ(ref["Hyperparams"]["opt_name"], "sgd");
  // The MLLOG file's opt_base_learning_rate, which the record keeps: 0.1 at the reference batch 64, linearly
  // scaled to 128.
  EXPECT_DOUBLE_EQ(ref["Hyperparams"]["opt_base_learning_rate"].get<double>(), 0.2);
  EXPECT_EQ(ref["Hyperparams"]["opt_momentum"], 0.9);
  // The warmup in epochs as the MLLOG file logs it: the record's warmup steps over its 7 steps per epoch (2, set
  // apart from the config's 3 so that the test tells which is read; it once said the config's 0 epochs).
  EXPECT_DOUBLE_EQ(ref["Hyperparams"]["opt_learning_rate_warmup_epochs"].get<double>(), 2.0 / 7);
  // And the steps beside them are the same 2 (they were the config's 3, contradicting the epochs; a hunt).
  EXPECT_EQ(ref["Hyperparams"]["opt_learning_rate_warmup_steps"], 2);
  // Records written before extra.warmup_steps was kept: the configured warmup, in steps by the schedule's own rule
  // (0.5 epochs of 7 steps are 4 steps, 4/7 epochs, as their MLLOG files logged it), and a warmup in steps as given.
  {
    const std::vector<std::pair<size_t, double>> reached = {{0, 3.0}, {1, 2.5}, {3, 3.5}};  // batch 128's
    const auto rewrite = [&](const Json& warmup) {
      for (const auto& [i, epoch] : reached) {
        dtbench::slurm::Run old = points[0].runs[i];
        if (!warmup.is_null()) old.config["schedule"]["warmup"].update(warmup);
        dtbench::write_json_atomic(dir / "configs" / (old.name + ".json"), old.config, false);
        write(old, 128, epoch);
        const fs::path file = dir / "runs" / (old.name + ".json");
        dtbench::RunRecord r = *dtbench::read_run_record(file).record;
        if (!warmup.is_null()) r.extra.erase("warmup_steps");
        dtbench::write_json_atomic(file, r.to_json(), false);
      }
    };
    rewrite({{"epochs", 0.5}, {"steps", 0}});
    const Json old = reference_convergence_points(load_campaign(dir)).rcps["resnet_ref_128"]["Hyperparams"];
    EXPECT_DOUBLE_EQ(old["opt_learning_rate_warmup_epochs"].get<double>(), 4.0 / 7);
    EXPECT_EQ(old["opt_learning_rate_warmup_steps"], 4);  // the same warmup (it said 0; a review)
    rewrite({{"epochs", 0}, {"steps", 3}});
    EXPECT_DOUBLE_EQ(reference_convergence_points(load_campaign(dir))
                         .rcps["resnet_ref_128"]["Hyperparams"]["opt_learning_rate_warmup_epochs"].get<double>(),
                     3.0 / 7);
    rewrite(Json());  // as they were
  }
  EXPECT_EQ(ref["Platform"], "1xAMD EPYC");
  EXPECT_EQ(ref["Creator"], "dtbench");
  ASSERT_EQ(set.skipped.size(), 1u);
  EXPECT_NE(set.skipped[0].find("2 of 3 finished runs reached the target; an RCP needs at least 3"), std::string::npos)
      << set.skipped[0];
  // Batch 128's RCP is 3 of its 4 finished runs: said (it was silent; found by a hunt).
  ASSERT_EQ(set.fewer_runs.size(), 1u);
  EXPECT_EQ(set.fewer_runs[0], points[0].id + ": 3 of 4 finished runs reached the target; the others have no epochs to "
                                           "converge and are not in its RCP");
  // A run that reached the target and diverged after is not a converged reference (it was in the RCP; a hunt).
  {
    dtbench::RunRecord r = *dtbench::read_run_record(dir / "runs" / (points[0].runs[0].name + ".json")).record;
    r.status = dtbench::RunStatus::diverged;
    dtbench::write_json_atomic(dir / "runs" / (r.name + ".json"), r.to_json(), false);
    const RcpSet diverged = reference_convergence_points(load_campaign(dir));
    EXPECT_EQ(diverged.rcps.size(), 0u);  // 2 of 4 left at batch 128
    write(points[0].runs[0], 128, 3.0);
  }

  // A run that evaluated part of the test set (/eval/test_samples) is not an epoch count to the target: batch
  // 128 is left with 2 of its 4 finished runs at the target, and the reason names the run left out.
  {
    dtbench::slurm::Run partial = points[0].runs[3];
    partial.config["eval"]["test_samples"] = 2000;
    // The sweep's config too: a record made from another config than its index gives the run is unreadable.
    dtbench::write_json_atomic(dir / "configs" / (partial.name + ".json"), partial.config, false);
    write(partial, 128, 3.5);
    const RcpSet cut = reference_convergence_points(load_campaign(dir));
    EXPECT_EQ(cut.rcps.size(), 0u);
    ASSERT_EQ(cut.skipped.size(), 2u);
    EXPECT_NE(cut.skipped[0].find("2 of 4 finished runs reached the target; an RCP needs at least 3 (1 evaluated "
                                  "part of the test set"),
              std::string::npos)
        << cut.skipped[0];
    // /eval/test_samples as large as the whole test set (extra.test_set_samples, which the trainer records) is the
    // whole set: counted (it was left out as part of it; a hunt). One image fewer is part of it.
    for (const int64_t whole : {2000, 2001}) {
      const fs::path file = dir / "runs" / (partial.name + ".json");
      dtbench::RunRecord whole_set = *dtbench::read_run_record(file).record;
      whole_set.extra["test_set_samples"] = whole;
      dtbench::write_json_atomic(file, whole_set.to_json(), false);
      EXPECT_EQ(reference_convergence_points(load_campaign(dir)).rcps.size(), whole == 2000 ? 1u : 0u) << whole;
    }
  }

  // A record whose config lacks a field the export reads (/optimizer here, config file and record alike): BadInput
  // naming the record and the pointer. It wrote `"opt_name": ,` (a const operator[] on a missing key) with exit 0.
  {
    dtbench::slurm::Run bare = points[0].runs[1];
    // The export's message for this run with `optimizer` as its /optimizer (null: none).
    const auto refused = [&](const Json& optimizer) -> std::string {
      if (optimizer.is_null()) bare.config.erase("optimizer");
      else bare.config["optimizer"] = optimizer;
      dtbench::write_json_atomic(dir / "configs" / (bare.name + ".json"), bare.config, false);
      write(bare, 128, 2.5);
      try {
        reference_convergence_points(load_campaign(dir));
      } catch (const dtbench::BadInput& e) {
        return e.what();
      }
      ADD_FAILURE() << "no BadInput";
      return "";
    };
    const std::string file = (dir / "runs" / (bare.name + ".json")).string();
    EXPECT_EQ(refused(Json()), file + ": /config/optimizer: missing");
    EXPECT_EQ(refused({{"name", 5}, {"lr", 0.1}}), file + ": /config/optimizer/name: expected a string, got 5");
    // A long wrong value is cut in the message (a 100,000-character list echoed whole buried the pointer).
    const std::string what = refused({{"name", "sgd"}, {"lr", Json::array({std::string(100000, 'x')})}});
    EXPECT_EQ(what.rfind(file + ": /config/optimizer/lr: expected a number, got [\"xxx", 0), 0u) << what.substr(0, 300);
    EXPECT_LT(what.size(), file.size() + 100);
    dtbench::write_json_atomic(dir / "configs" / (bare.name + ".json"), points[0].runs[1].config, false);
    write(points[0].runs[1], 128, 2.5);
  }

  // Points that differ in the target, the model or the data set under one benchmark name: BadInput naming the key
  // (a zip of batch and target wrote epochs to two targets into one file; a hunt).
  {
    const auto refused = [&](const char* key, const Json& value) -> std::string {
      for (size_t i : {0, 2}) {
        dtbench::slurm::Run other = points[1].runs[i];
        other.config[Json::json_pointer(key)] = value;
        dtbench::write_json_atomic(dir / "configs" / (other.name + ".json"), other.config, false);
        write(other, 256, i == 0 ? 4.0 : 5.0);
      }
      std::string what = "no BadInput";
      try {
        reference_convergence_points(load_campaign(dir));
      } catch (const dtbench::BadInput& e) {
        what = e.what();
      }
      for (size_t i : {0, 2}) {
        dtbench::write_json_atomic(dir / "configs" / (points[1].runs[i].name + ".json"), points[1].runs[i].config, false);
        write(points[1].runs[i], 256, i == 0 ? 4.0 : 5.0);
      }
      return what;
    };
    // Named by their record files and points (they were named by the point ids alone; noticed in stop 58).
    const std::string why = " (one RCP file holds the epochs to one target of one model on one data set)";
    const auto at = [&](size_t point) {
      return (dir / "runs" / (points[point].runs[0].name + ".json")).string() + " (point " + points[point].id + ")";
    };
    EXPECT_EQ(refused("/eval/target_accuracy", 0.75), at(1) + ": /eval/target_accuracy 0.75, but " + at(0) +
                                                          "'s is 0.9" + why);
    EXPECT_EQ(refused("/model/arch", "resnet8"), at(1) + ": /model/arch \"resnet8\", but " + at(0) +
                                                     "'s is \"resnet20\"" + why);
    EXPECT_EQ(refused("/data/dataset", "cifar10"), at(1) + ": /data/dataset \"cifar10\", but " + at(0) +
                                                       "'s is \"fashion-mnist\"" + why);
    EXPECT_NO_THROW(reference_convergence_points(load_campaign(dir)));  // as it was
  }

  // Another benchmark in the same campaign, and a campaign without any target: BadInput.
  Json mlp = points[1].runs[1].config;
  mlp["model"] = {{"arch", "mlp"}, {"hidden", 8}};
  dtbench::RunRecord r;
  r.name = points[1].runs[1].name;
  r.config = mlp;
  r.global_batch = 256, r.per_rank_batch = 256;
  r.status = dtbench::RunStatus::reached_target;
  r.target_accuracy = 0.9;
  r.time_to_accuracy = dtbench::TimeToAccuracy{10, 5, 4.5, 5 * 256};
  dtbench::EvalPoint at_target;
  at_target.wall_seconds = 10, at_target.step = 5, at_target.epoch = 4.5, at_target.samples = 5 * 256;
  at_target.test_accuracy = 0.9;
  r.curve = {at_target};
  dtbench::write_json_atomic(dir / "runs" / (r.name + ".json"), r.to_json(), false);
  dtbench::write_json_atomic(dir / "configs" / (r.name + ".json"), mlp, false);
  EXPECT_THROW(reference_convergence_points(load_campaign(dir)), dtbench::BadInput);
  fs::remove_all(dir);
  CampaignData empty;
  empty.name = "none";
  EXPECT_THROW(reference_convergence_points(empty), dtbench::BadInput);
  // Every run with a target evaluated part of the test set: no point gives an RCP (table exits 1), each saying why
  // (it was refused as a campaign without any target, exit 2, which every run had; a hunt).
  r.config["eval"]["test_samples"] = 500;
  RunData part_run;
  part_run.name = r.name, part_run.record = r, part_run.config = r.config, part_run.state = "done";
  part_run.record_path = "part.json";
  CampaignData part;
  part.name = "part";
  part.points.push_back(PointData{"p0", {}, {part_run}});
  const RcpSet none = reference_convergence_points(part);
  EXPECT_TRUE(none.rcps.empty());
  ASSERT_EQ(none.skipped.size(), 1u);
  EXPECT_NE(none.skipped[0].find("(1 evaluated part of the test set, /eval/test_samples: not counted)"),
            std::string::npos)
      << none.skipped[0];
}
