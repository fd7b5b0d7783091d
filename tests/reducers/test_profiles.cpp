// The published profiles (results/published/networks.json, compute.json) through their one reader,
// and the two questions asked of them: the batch split (claim f) against the ring's closed form
// (Patarasuk and Yuan 2009) on a hand-computed case, and the time to train (claim i) on a hand-computed
// cluster.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "core/published_dir.hpp"
#include "reducers/batch_split.hpp"
#include "reducers/profiles.hpp"
#include "reducers/time_to_train.hpp"

namespace dtbench {
namespace {

Json read(const char* name) { return read_json_file((published_dir() / name).string(), "test"); }

// The message parse_profiles throws for the two documents, or "" when it accepts them.
std::string error_of(const Json& networks, const Json& compute) {
  try {
    parse_profiles(networks, "networks.json", compute, "compute.json");
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

TEST(Profiles, PublishedFilesLoad) {
  const Profiles p = load_profiles(published_dir());
  EXPECT_EQ(p.network("10gbe-tcp").bandwidth_bytes_per_s, 1.25e9);
  EXPECT_EQ(p.network("ib-edr").bandwidth_basis, "nominal");
  EXPECT_EQ(p.cluster("goyal2017-big-basin").servers * p.cluster("goyal2017-big-basin").devices_per_server, 256);
  EXPECT_EQ(p.device("p100-resnet50-fp32-tf").images_per_s, 193);
  EXPECT_EQ(p.model_parameters.at("resnet50"), 25557032);  // the count tests/workloads checks on the model
  // The derived Caffe2 throughput is what its note says: 90 epochs of ImageNet in 29 h on 8 GPUs.
  EXPECT_NEAR(p.device("p100-resnet50-fp32-caffe2").images_per_s, 90 * 1281167.0 / (29 * 3600.0 * 8), 0.05);
  const CostParams c = p.network("50gbe-tcp").params(p.gamma_s_per_byte);
  EXPECT_EQ(c.alpha, 25e-6);
  EXPECT_EQ(c.alpha_rndv, c.alpha);
  EXPECT_DOUBLE_EQ(c.beta, 1 / 6.25e9);
}

TEST(Profiles, ErrorsNameTheFileAndThePointer) {
  const Json networks = read("networks.json"), compute = read("compute.json");
  ASSERT_EQ(error_of(networks, compute), "");
  Json n = networks;
  n["profiles"][2]["alpha_s"] = -1;
  EXPECT_EQ(error_of(n, compute), "networks.json: /profiles/2/alpha_s: expected a number in (0, 1], got -1");
  // Figures no published network or run reaches, which made the claims' times infinite ("inf" in the report; a
  // hunt): a latency above a second, a reduction slower than a millisecond per byte.
  n["profiles"][2]["alpha_s"] = 1e300;
  EXPECT_EQ(error_of(n, compute), "networks.json: /profiles/2/alpha_s: expected a number in (0, 1], got 1e+300");
  n = networks;
  n["gamma"]["seconds_per_byte"] = 1e300;
  EXPECT_EQ(error_of(n, compute), "networks.json: /gamma/seconds_per_byte: expected a number in (0, 0.001], got 1e+300");
  // A bandwidth whose reciprocal (seconds per byte) overflows: the model divided by a zero crossover (SIGFPE); one
  // of 1e-300 B/s printed steps of lround(inf). A link is refused outside 1 B/s .. 1 PB/s.
  for (double bad : {1e-320, 1e-300, 0.5, 2e15}) {
    n = networks;
    n["profiles"][1]["bandwidth_bytes_per_s"] = bad;
    EXPECT_EQ(error_of(n, compute), "networks.json: /profiles/1/bandwidth_bytes_per_s: expected bytes per second in "
                                    "[1, 1e15], got " + Json(bad).dump());
  }
  n = networks;
  n["profiles"][0]["latency"] = 1;
  EXPECT_EQ(error_of(n, compute), "networks.json: /profiles/0/latency: unexpected field");
  n = networks;
  n["profiles"][1]["alpha_basis"] = "guess";
  EXPECT_EQ(error_of(n, compute), "networks.json: /profiles/1/alpha_basis: expected one of \"nominal\", "
                                  "\"measured\", \"typical\", \"assumed\", got \"guess\"");
  n = networks;
  n["profiles"][3]["name"] = "10gbe-tcp";
  EXPECT_EQ(error_of(n, compute), "networks.json: /profiles/3/name: \"10gbe-tcp\" is given twice");
  n = networks;
  n["profiles"][0]["sources"] = Json::array();
  EXPECT_EQ(error_of(n, compute), "networks.json: /profiles/0/sources: expected a non-empty list");
  n = networks;
  n["clusters"][0]["inter"] = "token-ring";
  EXPECT_NE(error_of(n, compute).find("networks.json: /clusters/0/inter: no network profile \"token-ring\" (there are: "),
            std::string::npos);
  n = networks;
  n.erase("gamma");
  EXPECT_EQ(error_of(n, compute), "networks.json: /gamma: missing");

  Json c = compute;
  c["runs"][0]["device"] = "tpu";
  EXPECT_NE(error_of(networks, c).find("compute.json: /runs/0/device: no device \"tpu\""), std::string::npos);
  c = compute;
  c["runs"][1]["inter_reducer"] = "carrier_pigeon";
  EXPECT_NE(error_of(networks, c).find("compute.json: /runs/1/inter_reducer: "), std::string::npos);
  c = compute;
  c["runs"][0]["intra_reducer"] = "hierarchical";  // one link's algorithm, not the pair of them
  EXPECT_EQ(error_of(networks, c), "compute.json: /runs/0/intra_reducer: a flat reducer, one per link; \"hierarchical\" "
                                   "is the intra and inter pair itself");
  c = compute;
  c["devices"][1].erase("note");
  EXPECT_EQ(error_of(networks, c), "compute.json: /devices/1/note: missing (how it was derived)");
  c = compute;
  c["runs"][0]["batch"] = "8k";
  EXPECT_EQ(error_of(networks, c), "compute.json: /runs/0/batch: expected an integer, got \"8k\"");
  c = compute;
  c["kind"] = "dtbench-published-table";
  EXPECT_EQ(error_of(networks, c), "compute.json: /kind: expected \"dtbench-compute-profiles\"");

  try {
    load_profiles("/nonexistent-dtbench-dir");
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dtbench-dir/networks.json"), std::string::npos) << e.what();
  }
}

// The ring's time by Patarasuk and Yuan's closed form, written out here independently of ring.cpp.
double ring_seconds(int p, double n, const CostParams& c) {
  if (p == 1) return 0;
  return 2 * (p - 1) * c.alpha + 2.0 * (p - 1) / p * n * c.beta + double(p - 1) / p * n * c.gamma;
}

TEST(BatchSplit, CrossoverOnAHandComputedCase) {
  // B = 8, S = 800 bytes, alpha = 1 ms, beta = 10 us/B, gamma = 0, t_img = 10 ms. By hand:
  //   b = 1 (N = 8): T = 14 ms + 2 * 7/8 * 8 ms = 28 ms   against 10 ms of compute
  //   b = 2 (N = 4): T =  6 ms + 2 * 3/4 * 8 ms = 18 ms   against 20 ms
  //   b = 4 (N = 2): T =  2 ms + 2 * 1/2 * 8 ms = 10 ms   against 40 ms
  //   b = 8 (N = 1): no communication
  BatchSplitInput in;
  in.global_batch = 8;
  in.gradient_bytes = 800;
  in.seconds_per_image = 0.01;
  in.backward_share = 1;  // the whole step overlaps
  in.link = {1e-3, 1e-3, 1e-5, 0};
  BatchSplit s = batch_split(in);
  ASSERT_EQ(s.rows.size(), 4u);
  const double want[] = {0.028, 0.018, 0.010, 0};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(s.rows[i].per_node, 1 << i);
    EXPECT_EQ(s.rows[i].nodes, 8 >> i);
    EXPECT_NEAR(s.rows[i].comm_s, want[i], 1e-15);
    EXPECT_NEAR(s.rows[i].comm_s, ring_seconds(s.rows[i].nodes, 800, in.link), 1e-15);
    EXPECT_DOUBLE_EQ(s.rows[i].compute_s, 0.01 * (1 << i));
  }
  EXPECT_FALSE(s.row(1).hidden);
  EXPECT_TRUE(s.row(2).hidden);  // 18 ms <= 20 ms
  EXPECT_EQ(s.crossover_per_node, 2);
  // Only backward (2/3 of the compute) overlaps: b = 2 has 13.3 ms against 18 ms, b = 4 26.7 ms against 10.
  in.backward_share = 2.0 / 3.0;
  s = batch_split(in);
  EXPECT_FALSE(s.row(2).hidden);
  EXPECT_EQ(s.crossover_per_node, 4);
  EXPECT_THROW(s.row(3), BadInput);
  in.global_batch = 1000;
  EXPECT_THROW(batch_split(in), BadInput);
  in.global_batch = 8;
  in.reducer = "nosuch";
  EXPECT_THROW(batch_split(in), BadInput);
  // The largest power of two an int holds: 31 rows down to one node, where doubling past it divided by zero.
  in.reducer = "ring";
  in.global_batch = 1 << 30;
  s = batch_split(in);
  ASSERT_EQ(s.rows.size(), 31u);
  EXPECT_EQ(s.rows.back().per_node, 1 << 30);
  EXPECT_EQ(s.rows.back().nodes, 1);
}

TEST(BatchSplit, SeedsCasesOnPublishedTenGigabitEthernet) {
  // ResNet-50's fp32 gradients, a P100's 1/193 s per image (compute.json), the ring on 10 GbE.
  const Profiles p = load_profiles(published_dir());
  BatchSplitInput in;
  in.gradient_bytes = 25557032 * 4.0;
  in.seconds_per_image = 1 / p.device("p100-resnet50-fp32-tf").images_per_s;
  in.link = p.network("10gbe-tcp").params(p.gamma_s_per_byte);
  const BatchSplit s = batch_split(in);
  EXPECT_NEAR(s.row(64).comm_s, ring_seconds(16, in.gradient_bytes, in.link), 1e-12);
  EXPECT_NEAR(s.row(64).comm_s, 0.1545, 0.0005);  // 30 x 25 us + 2 x 15/16 x 102.2 MB / 1.25 GB/s + gamma
  EXPECT_TRUE(s.row(64).hidden);                  // 221 ms of backward
  EXPECT_FALSE(s.row(1).hidden);                  // 3.5 ms of backward against 215 ms
  EXPECT_EQ(s.crossover_per_node, 64);
}

TEST(TimeToTrain, HandComputedCluster) {
  // 2 servers x 2 devices; 100 images/s per device; 1000 parameters fp32 (S = 4000 bytes); 1000 images,
  // 2 epochs, batch 40: 50 steps of 10 images per device, 0.1 s of compute each.
  //   intra: ring on 2 ranks, alpha 1 us, 1 GB/s:                2 x 1 us + 4000 / 1e9     =  6 us
  //   inter: halving-doubling on 2 ranks, alpha 10 us, 10 kB/s:  2 x 10 us + 4000 / 1e4   = 0.40002 s
  //   exposed = 0.400026 - 2/3 x 0.1; step = 0.1 + exposed = 0.4333593...; predicted = 50 steps
  Profiles p;
  p.gamma_s_per_byte = 0;
  p.networks = {{"fast", "", 1e-6, 1e9, "nominal", "nominal", Json::array()},
                {"slow", "", 1e-5, 1e4, "nominal", "nominal", Json::array()}};
  p.clusters = {{"c", "", 2, 2, "fast", "slow", Json::array()}};
  p.devices = {{"d", "", "measured", 100, 10, Json::array()}};
  p.model_parameters["m"] = 1000;
  p.dataset_images["data"] = 1000;
  PublishedRun r;
  r.name = "run";
  r.cluster = "c", r.device = "d", r.model = "m", r.dataset = "data";
  r.intra_reducer = "ring", r.inter_reducer = "halving_doubling";
  r.bytes_per_parameter = 4, r.batch = 40, r.epochs = 2, r.published_minutes = 0.5;
  p.runs = {r};
  const TimeToTrain t = predict_time_to_train(p, "run");
  EXPECT_EQ(t.steps, 50);
  EXPECT_DOUBLE_EQ(t.compute_s, 0.1);
  EXPECT_NEAR(t.comm_intra_s, 6e-6, 1e-18);
  EXPECT_NEAR(t.comm_inter_s, 0.40002, 1e-15);
  const double step = 0.1 + (0.400026 - 0.1 * 2 / 3);
  EXPECT_NEAR(t.step_s, step, 1e-14);
  EXPECT_NEAR(t.predicted_s, 50 * step, 1e-12);
  EXPECT_EQ(t.published_s, 30);
  EXPECT_NEAR(t.rel_error, (50 * step - 30) / 30, 1e-14);
  EXPECT_EQ(t.to_json()["inputs"]["gradient_bytes"], 4000.0);
  // A batch that does not divide over the devices is refused.
  p.runs[0].batch = 42;
  EXPECT_THROW(predict_time_to_train(p, "run"), BadInput);
}

TEST(TimeToTrain, PublishedRuns) {
  // The committed inputs' predictions, printed for the report, and the formula's pieces checked.
  const Profiles p = load_profiles(published_dir());
  for (const char* name : {"goyal2017", "akiba2017"}) {
    const TimeToTrain t = predict_time_to_train(p, name);
    std::printf("%s: %.0f steps x %.4f s (compute %.4f, comm %.4f + %.4f, exposed %.4f) = %.1f min, published %.1f "
                "min, error %+.1f%%\n",
                name, t.steps, t.step_s, t.compute_s, t.comm_intra_s, t.comm_inter_s, t.exposed_s,
                t.predicted_s / 60, t.published_s / 60, 100 * t.rel_error);
    EXPECT_NEAR(t.predicted_s, t.steps * t.step_s, 1e-9);
    EXPECT_GT(t.comm_inter_s, t.comm_intra_s);  // the network, not NVLink or PCIe, is the slow part
  }
  EXPECT_EQ(predict_time_to_train(p, "goyal2017").steps, 14076);  // the seed's second table's step count
  EXPECT_EQ(predict_time_to_train(p, "akiba2017").steps, 3519);
}

}  // namespace
}  // namespace dtbench
