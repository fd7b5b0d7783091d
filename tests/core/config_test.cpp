// Config validation: every rule, with the exact error text a user sees.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "config/run_config.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "optim/options.hpp"
#include "optim/registry.hpp"
#include "optim/schedule.hpp"

using dtbench::BadInput;
using dtbench::Json;
namespace config = dtbench::config;

namespace {

// The message of the BadInput that resolving `user` on `ranks` ranks throws ("" if none).
std::string error_of(const Json& user, int ranks = 0) {
  try {
    config::resolve(user, ranks);
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

std::string error_of_set(const std::vector<std::string>& sets, int ranks = 0) {
  try {
    config::load("", sets, ranks);
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Config, DefaultsResolveAndAreComplete) {
  Json d = config::defaults();
  EXPECT_EQ(d["model"]["arch"], "resnet20");
  EXPECT_EQ(d["data"]["dataset"], "fashion-mnist");
  EXPECT_EQ(d["optimizer"]["name"], "sgd");
  EXPECT_DOUBLE_EQ(d["optimizer"]["momentum"].get<double>(), 0.9);
  EXPECT_EQ(d["batch"]["global"], 128);
  // Resolving the defaults is a fixed point.
  EXPECT_EQ(config::resolve(d, 0), d);
  EXPECT_EQ(config::resolve(Json::object(), 4), d);
}

TEST(Config, ExactMessageForOutOfRangeType) {
  EXPECT_EQ(error_of({{"optimizer", {{"momentum", "high"}}}}),
            "/optimizer/momentum: expected a number in [0, 1), got \"high\"");
  EXPECT_EQ(error_of({{"optimizer", {{"momentum", 1.0}}}}),
            "/optimizer/momentum: expected a number in [0, 1), got 1.0");
}

TEST(Config, UnknownKeysNameThePointerAndSuggest) {
  EXPECT_EQ(error_of({{"optimizer", {{"momentun", 0.5}}}}),
            "/optimizer/momentun: unknown key (did you mean \"momentum\"?); valid keys here: lr, weight_decay, "
            "no_decay_bn_bias, clip_grad_norm, clip_grad_value, momentum, dampening, nesterov, decoupled_weight_decay");
  EXPECT_EQ(error_of({{"bogus", 1}}).rfind("/bogus: unknown key; valid keys here: name, seed,", 0), 0u);
  // A key valid for another optimizer is unknown for this one.
  EXPECT_EQ(error_of({{"optimizer", {{"name", "sgd"}, {"beta1", 0.9}}}}).rfind("/optimizer/beta1: unknown key", 0), 0u);
}

TEST(Config, ModelWidthsBelongToTheirArch) {
  // simple_cnn's defaults are Shallue et al.'s base widths; mlp keeps its own hidden default.
  const Json cnn = config::resolve({{"model", {{"arch", "simple_cnn"}}}}, 0)["model"];
  EXPECT_EQ(cnn["conv_filters"], Json::array({32, 64}));
  EXPECT_EQ(cnn["hidden"], 1024);
  EXPECT_EQ(config::resolve({{"model", {{"arch", "mlp"}}}}, 0)["model"]["hidden"], 256);
  EXPECT_FALSE(config::defaults()["model"].contains("hidden"));
  // A width of another arch is an unknown key; a wrong filter list names the element.
  EXPECT_EQ(error_of({{"model", {{"arch", "resnet20"}, {"hidden", 64}}}}).rfind("/model/hidden: unknown key", 0), 0u);
  EXPECT_EQ(error_of({{"model", {{"arch", "mlp"}, {"conv_filters", {8, 8}}}}}).rfind("/model/conv_filters: unknown", 0),
            0u);
  EXPECT_EQ(error_of({{"model", {{"arch", "simple_cnn"}, {"conv_filters", {8}}}}}),
            "/model/conv_filters: simple_cnn has two convolutions: give two filter counts, got [8]");
  EXPECT_EQ(error_of({{"model", {{"arch", "simple_cnn"}, {"conv_filters", {8, 0}}}}}),
            "/model/conv_filters/1: a filter count must be >= 1, got 0");
}

TEST(Config, WrongTypes) {
  EXPECT_EQ(error_of({{"batch", {{"global", -4}}}}), "/batch/global: expected an integer in [0, 1000000000], got -4");
  EXPECT_EQ(error_of({{"batch", {{"global", 12.5}}}}), "/batch/global: expected an integer in [0, 1000000000], got 12.5");
  EXPECT_EQ(error_of({{"optimizer", {{"nesterov", 1}}}}), "/optimizer/nesterov: expected true or false, got 1");
  EXPECT_EQ(error_of({{"model", "resnet20"}}), "/model: expected an object, got \"resnet20\"");
  EXPECT_EQ(error_of({{"seed", "one"}}), "/seed: expected an integer in [0, 9007199254740991], got \"one\"");
  EXPECT_EQ(error_of({{"schedule", {{"name", "multistep"}, {"milestones", {30, "x"}}}}}),
            "/schedule/milestones/1: expected an integer >= 0 and <= 2^53, got \"x\"");
  // Integral floats are integers.
  EXPECT_EQ(config::resolve({{"batch", {{"global", 256.0}}}}, 0)["batch"]["global"], 256);
}

TEST(Config, UnknownNames) {
  EXPECT_EQ(error_of({{"optimizer", {{"name", "sgdd"}}}}),
            "/optimizer/name: expected one of \"sgd\", \"adam\", \"adamw\", \"adamax\", \"nadam\", \"adagrad\", "
            "\"rmsprop\", \"adadelta\", \"ftrl\", \"sgld\", \"dcasgd\", \"lars\", \"lamb\", \"kfac\", got \"sgdd\"");
  EXPECT_EQ(error_of({{"reducer", {{"name", "allgather"}}}}).rfind("/reducer/name: expected one of \"parameter_server\"", 0),
            0u);
  EXPECT_EQ(error_of({{"schedule", {{"name", "linear"}}}}).rfind("/schedule/name: expected one of \"constant\"", 0), 0u);
}

TEST(Config, VariantDefaultsFollowTheName) {
  Json adam = config::resolve({{"optimizer", {{"name", "adam"}}}}, 0);
  EXPECT_DOUBLE_EQ(adam["optimizer"]["lr"].get<double>(), 1e-3);
  EXPECT_DOUBLE_EQ(adam["optimizer"]["weight_decay"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(adam["optimizer"]["beta2"].get<double>(), 0.999);
  EXPECT_FALSE(adam["optimizer"].contains("momentum"));
  Json lars = config::resolve({{"optimizer", {{"name", "lars"}, {"eta", 0.002}}}}, 0);
  EXPECT_DOUBLE_EQ(lars["optimizer"]["eta"].get<double>(), 0.002);
  EXPECT_TRUE(lars["optimizer"]["trust_exclude_bn_bias"].get<bool>());
}

TEST(Config, BatchRules) {
  EXPECT_EQ(error_of({{"batch", {{"global", 100}}}}, 3), "/batch/global: 100 is not divisible by the rank count 3");
  EXPECT_EQ(error_of({{"batch", {{"global", 128}, {"per_rank", 64}}}}),
            "/batch/global: give either /batch/global or /batch/per_rank, not both");
  EXPECT_EQ(error_of({{"batch", {{"global", 0}}}}), "/batch: one of /batch/global and /batch/per_rank must be >= 1");
  Json per = config::resolve({{"batch", {{"per_rank", 64}}}}, 3);
  EXPECT_EQ(per["batch"]["global"], 0);
  EXPECT_EQ(config::global_batch(per, 3), 192);
  EXPECT_EQ(config::per_rank_batch(per, 3), 64);
  Json glob = config::resolve({{"batch", {{"global", 256}}}}, 4);
  EXPECT_EQ(config::per_rank_batch(glob, 4), 64);
  EXPECT_EQ(config::global_batch(glob, 4), 256);
}

TEST(Config, MicroBatchRules) {
  EXPECT_EQ(config::defaults()["batch"]["micro_batches"], 1);
  // 128 / 4 ranks = 32 per rank, 32 / 3 is not whole; 32 / 4 is.
  EXPECT_EQ(error_of({{"batch", {{"micro_batches", 3}}}}, 4),
            "/batch/micro_batches: the per-rank batch 32 is not divisible by 3 micro-batches");
  EXPECT_EQ(error_of({{"batch", {{"micro_batches", 4}}}}, 4), "");
  EXPECT_EQ(error_of({{"batch", {{"per_rank", 6}, {"micro_batches", 4}}}}, 2),
            "/batch/micro_batches: the per-rank batch 6 is not divisible by 4 micro-batches");
  // 2 pipeline stages on 6 ranks: 3 replicas of global 6 hold 2 each, which 4 micro-batches do not divide.
  EXPECT_EQ(error_of({{"batch", {{"global", 6}, {"micro_batches", 4}}}, {"parallel", {{"pipeline_stages", 2}}}}, 6),
            "/batch/micro_batches: the per-replica batch 2 is not divisible by 4 micro-batches");
  EXPECT_EQ(error_of({{"batch", {{"micro_batches", 0}}}}),
            "/batch/micro_batches: expected an integer in [1, 1000000000], got 0");
  const std::string not_sync = "/batch/micro_batches: gradient accumulation needs /parallel/mode \"sync\"";
  for (const char* mode : {"local_sgd", "post_local_sgd"})
    EXPECT_EQ(error_of({{"batch", {{"micro_batches", 2}}}, {"parallel", {{"mode", mode}}}}).rfind(not_sync, 0), 0u);
  EXPECT_EQ(error_of({{"batch", {{"micro_batches", 2}}},
                      {"parallel", {{"mode", "async"}}},
                      {"reducer", {{"name", "async_parameter_server"}}}})
                .rfind(not_sync, 0),
            0u);
  EXPECT_EQ(error_of({{"batch", {{"micro_batches", 2}}}, {"parallel", {{"sync_bn", true}}}})
                .rfind("/batch/micro_batches: gradient accumulation cannot use synchronised batch norm", 0),
            0u);
  // Dropout draws each sample's mask from its position in the global batch, so micro-batches draw what K x m
  // ranks draw (workloads/models/dropout_mask.hpp): allowed.
  EXPECT_EQ(error_of({{"batch", {{"micro_batches", 2}}}, {"model", {{"dropout", 0.5}}}}), "");
  // One micro-batch is the plain step: every mode and layer may use it.
  EXPECT_EQ(error_of({{"batch", {{"micro_batches", 1}}}, {"model", {{"dropout", 0.5}}}, {"parallel", {{"sync_bn", true}}}}),
            "");
}

TEST(Config, GhostBatchRules) {
  EXPECT_EQ(config::defaults()["model"]["ghost_batch"], 0);
  // 128 / 4 ranks = 32 per rank: ghost batches of 8 fit, of 12 do not; with 2 micro-batches each forward has 16.
  EXPECT_EQ(error_of({{"model", {{"ghost_batch", 8}}}}, 4), "");
  EXPECT_EQ(error_of({{"model", {{"ghost_batch", 12}}}}, 4),
            "/model/ghost_batch: a ghost batch of 12 does not divide the batch of each forward, 32 (per-rank batch "
            "/ micro_batches)");
  EXPECT_EQ(error_of({{"model", {{"ghost_batch", 32}}}, {"batch", {{"micro_batches", 2}}}}, 4),
            "/model/ghost_batch: a ghost batch of 32 does not divide the batch of each forward, 16 (per-rank batch "
            "/ micro_batches)");
  EXPECT_EQ(error_of({{"model", {{"ghost_batch", -1}}}}), "/model/ghost_batch: expected an integer in [0, 1000000000], got -1");
  EXPECT_EQ(error_of({{"model", {{"arch", "mlp"}, {"ghost_batch", 8}}}}),
            "/model/ghost_batch: ghost batch norm needs batch norm: arch \"mlp\" has none (use a ResNet)");
  EXPECT_EQ(error_of({{"model", {{"ghost_batch", 8}}}, {"parallel", {{"sync_bn", true}}}})
                .rfind("/model/ghost_batch: ghost batch norm and synchronised batch norm exclude each other", 0),
            0u);
  EXPECT_EQ(error_of({{"model", {{"ghost_batch", 8}}}, {"backend", "gpu"}}).rfind("/model/ghost_batch: ghost batch norm is implemented for the cpu backend only", 0), 0u);
}

TEST(Config, CheckpointingRules) {
  EXPECT_EQ(config::defaults()["model"]["checkpointing"], false);
  EXPECT_EQ(config::defaults()["model"]["checkpoint_segments"], 0);
  EXPECT_EQ(error_of({{"model", {{"checkpointing", true}}}}), "");
  EXPECT_EQ(error_of({{"model", {{"checkpointing", true}, {"checkpoint_segments", 10}}}}), "");  // ResNet-20: 10 units
  EXPECT_EQ(error_of({{"model", {{"checkpointing", true}, {"checkpoint_segments", 11}}}}),
            "/model/checkpoint_segments: 11 segments are more than arch \"resnet20\" has checkpoint units, 10 (the "
            "stem and each residual block)");
  EXPECT_EQ(error_of({{"model", {{"arch", "resnet50"}, {"checkpointing", true}, {"checkpoint_segments", 18}}}})
                .rfind("/model/checkpoint_segments: 18 segments are more than arch \"resnet50\" has checkpoint units, 17", 0),
            0u);
  EXPECT_EQ(error_of({{"model", {{"arch", "simple_cnn"}, {"checkpointing", true}, {"checkpoint_segments", 3}}}}),
            "/model/checkpoint_segments: 3 segments are more than arch \"simple_cnn\" has checkpoint units, 2 (its two "
            "convolution stages)");
  EXPECT_EQ(error_of({{"model", {{"checkpoint_segments", 4}}}}),
            "/model/checkpoint_segments: segments apply to gradient checkpointing: set /model/checkpointing true");
  EXPECT_EQ(error_of({{"model", {{"arch", "mlp"}, {"checkpointing", true}}}})
                .rfind("/model/checkpointing: arch \"mlp\" has no layers to checkpoint", 0),
            0u);
  EXPECT_EQ(error_of({{"model", {{"checkpointing", true}}}, {"backend", "gpu"}}),
            "/model/checkpointing: gradient checkpointing is implemented for the cpu backend only");
  EXPECT_EQ(error_of({{"model", {{"checkpoint_segments", -1}}}}),
            "/model/checkpoint_segments: expected an integer in [0, 1000000], got -1");
}

TEST(Config, MllogSectionDescribesTheSubmission) {
  const Json d = config::defaults();
  EXPECT_EQ(d["mllog"]["submission_org"], "dtbench");
  EXPECT_EQ(d["mllog"]["submission_division"], "open");
  EXPECT_EQ(d["mllog"]["submission_status"], "research");
  EXPECT_EQ(d["mllog"]["cache_clear"], false);
  EXPECT_EQ(error_of({{"mllog", {{"submission_org", ""}}}}),
            "/mllog/submission_org: must not be empty (MLPerf's checker requires a value)");
  EXPECT_EQ(error_of({{"mllog", {{"submission_division", "public"}}}}),
            "/mllog/submission_division: expected one of \"open\", got \"public\"");
  EXPECT_EQ(error_of({{"mllog", {{"submission_status", "available"}}}}).rfind("/mllog/submission_status: expected one of", 0),
            0u);
}

TEST(Config, StalenessBoundRules) {
  const Json async = {{"mode", "async"}, {"bounded_staleness", true}, {"staleness_bound", 2}};
  EXPECT_EQ(error_of({{"parallel", async}, {"reducer", {{"name", "async_parameter_server"}}}}), "");
  EXPECT_EQ(error_of({{"parallel", {{"staleness_bound", -1}}}}),
            "/parallel/staleness_bound: expected an integer in [0, 1000000000], got -1");
  EXPECT_EQ(error_of({{"parallel", {{"bounded_staleness", true}}}}).rfind("/parallel/bounded_staleness: a staleness bound applies to asynchronous SGD only", 0), 0u);
  EXPECT_EQ(error_of({{"parallel", {{"staleness_bound", 3}}}}).rfind("/parallel/staleness_bound: set /parallel/bounded_staleness true", 0), 0u);
}

TEST(Config, TestSamplesRules) {
  const Json synthetic = {{"dataset", "synthetic"}, {"synthetic", {{"test_size", 300}}}};
  EXPECT_EQ(error_of({{"data", synthetic}, {"eval", {{"test_samples", 300}}}}), "");
  EXPECT_EQ(error_of({{"data", synthetic}, {"eval", {{"test_samples", 301}}}}),
            "/eval/test_samples: 301 is more than the test set's 300 images (/data/synthetic/test_size)");
  EXPECT_EQ(error_of({{"eval", {{"test_samples", -1}}}}),
            "/eval/test_samples: expected an integer in [0, 1000000000], got -1");
  // A dataset file's size is known once it is read: the rules let it through (TrainingData refuses it).
  EXPECT_EQ(error_of({{"data", {{"dataset", "fashion-mnist"}}}, {"eval", {{"test_samples", 1000000}}}}), "");
}

TEST(Config, DurationWarmupAndMilestones) {
  EXPECT_EQ(error_of({{"duration", {{"epochs", 3}}}, {"schedule", {{"warmup", {{"epochs", 5}}}}}}),
            "/schedule/warmup/epochs: warmup of 5 epochs is longer than the run (3 epochs)");
  EXPECT_EQ(error_of({{"duration", {{"steps", 10}}}, {"schedule", {{"warmup", {{"steps", 11}}}}}}),
            "/schedule/warmup/steps: warmup of 11 steps is longer than the run (10 steps)");
  EXPECT_EQ(error_of({{"schedule", {{"warmup", {{"steps", 1}, {"epochs", 1}}}}}}),
            "/schedule/warmup/epochs: give either /schedule/warmup/epochs or /schedule/warmup/steps, not both");
  EXPECT_EQ(error_of({{"schedule", {{"name", "multistep"}, {"milestones", {30, 20}}}}}),
            "/schedule/milestones/1: milestones must increase, got [30,20]");
  Json steps = config::resolve({{"duration", {{"steps", 40}}}}, 0);
  EXPECT_EQ(steps["duration"]["epochs"], 0);
}

TEST(Config, ServersAtMostRanks) {
  EXPECT_EQ(error_of({{"reducer", {{"name", "parameter_server"}, {"servers", 3}}}}, 2),
            "/reducer/servers: 3 servers is more than the rank count 2");
}

TEST(Config, SetOverridesFollowTheSameRules) {
  Json c = config::load("", {"optimizer.name=adam", "optimizer.lr=0.01", "data.augment.horizontal_flip=true",
                             "name=my run"},
                        0);
  EXPECT_EQ(c["optimizer"]["name"], "adam");
  EXPECT_DOUBLE_EQ(c["optimizer"]["lr"].get<double>(), 0.01);
  EXPECT_TRUE(c["data"]["augment"]["horizontal_flip"].get<bool>());
  EXPECT_EQ(c["name"], "my run");
  // Each error names the --set it came from (config::attributed), as train's do.
  EXPECT_EQ(error_of_set({"optimizer.momentum=high"}),
            "--set optimizer.momentum=high: /optimizer/momentum: expected a number in [0, 1), got \"high\"");
  EXPECT_EQ(error_of_set({"optimizer.lr=nan"}), "--set optimizer.lr=nan: /optimizer/lr: expected a number > 0, got \"nan\"");
  EXPECT_EQ(error_of_set({"optimizer.lr=-0.1"}), "--set optimizer.lr=-0.1: /optimizer/lr: expected a number > 0, got -0.1");
  EXPECT_EQ(error_of_set({"optimizer"}), "--set optimizer: expected key.path=value");
  EXPECT_EQ(error_of_set({"optimizer..lr=1"}), "--set optimizer..lr=1: empty key in \"optimizer..lr\"");
  EXPECT_EQ(error_of_set({"modle.arch=resnet8"}).rfind("--set modle.arch=resnet8: /modle: unknown key (did you mean \"model\"?)", 0), 0u);
  // Found by fuzz_config: a key path that is not UTF-8 became an object key, and the unknown-key message's dump
  // of it threw (exit 1, "internal error"). It is bad input, refused before it reaches the config.
  EXPECT_EQ(error_of_set({"optimizer.name=adam", "precision.nam\xee\xee" "e=adam"}),
            "--set: the key path is not valid UTF-8 (byte 13)");
  EXPECT_EQ(error_of_set({"\xc3=1"}), "--set: the key path is not valid UTF-8 (byte 0)");
  // A key holding '/' or '~' is one token of the pointer (RFC 6901), and the error is still traced to its --set.
  EXPECT_EQ(error_of_set({"data.a/b~c=1"}).rfind("--set data.a/b~c=1: /data/a~1b~0c: unknown key", 0), 0u);
}

TEST(Config, DottedPathsBecomePointers) {
  EXPECT_EQ(config::dotted_pointer("optimizer.lr"), "/optimizer/lr");
  EXPECT_EQ(config::dotted_pointer("seed"), "/seed");
  EXPECT_EQ(config::dotted_pointer("a/b.~c"), "/a~1b/~0c");
  EXPECT_EQ(config::dotted_pointer(""), "/");
}

TEST(Config, FileErrorsNameTheFileAndPosition) {
  auto dir = std::filesystem::temp_directory_path() / "dtbench-config-test";
  std::filesystem::create_directories(dir);
  auto bad = dir / "bad.json";
  std::ofstream(bad) << "{\n  \"seed\": 1,\n  \"model\": {\"arch\": }\n}\n";
  try {
    config::load(bad.string(), {}, 0);
    FAIL() << "expected BadInput";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), bad.string() + ":3:21: invalid JSON (byte 35)");
  }
  auto wrong = dir / "wrong.json";
  std::ofstream(wrong) << R"({"optimizer": {"momentum": "high"}})";
  try {
    config::load(wrong.string(), {}, 0);
    FAIL() << "expected BadInput";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), wrong.string() + ": /optimizer/momentum: expected a number in [0, 1), got \"high\"");
  }
  try {
    config::load((dir / "missing.json").string(), {}, 0);
    FAIL() << "expected BadInput";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "missing.json").string() + ": cannot open config file");
  }
}

// Each optimizer and schedule is registered once; the run schema's sections come from the registries.
// An entry whose keys, defaults or factory disagree fails here.
TEST(Config, SchemaNamesAreTheRegistries) {
  const auto& root = config::run_schema();
  auto section = [&](const std::string& key) -> const config::Node& {
    for (const auto& [k, node] : root.fields)
      if (k == key) return node;
    throw std::logic_error("no section " + key);
  };
  std::vector<std::string> optimizers, schedules;
  for (const auto& e : dtbench::optim::optimizer_registry()) optimizers.push_back(e.name);
  for (const auto& e : dtbench::optim::schedule_registry()) schedules.push_back(e.name);
  EXPECT_EQ(config::variant_names(section("optimizer")), optimizers);
  EXPECT_EQ(dtbench::optim::optimizer_names(), optimizers);
  EXPECT_EQ(config::variant_names(section("schedule")), schedules);
  EXPECT_EQ(dtbench::optim::schedule_names(), schedules);
}

TEST(Config, EveryRegisteredOptimizerAndScheduleResolvesAndBuilds) {
  // K-FAC needs each weight's rows (output channels): 2 x 4.
  const dtbench::optim::ParamTable table({{"conv.weight", 0, 8, dtbench::optim::TensorKind::conv_weight, 2},
                                          {"bn.gamma", 8, 2, dtbench::optim::TensorKind::bn}});
  for (const std::string& name : dtbench::optim::optimizer_names()) {
    const Json c = config::resolve({{"optimizer", {{"name", name}}}}, 0);
    EXPECT_EQ(c["optimizer"]["name"], name);
    // The factory reads the resolved section and builds the optimizer the entry names; a section with
    // only the name takes the same defaults from the registry.
    EXPECT_EQ(dtbench::optim::make_optimizer(c["optimizer"], table)->name(), name);
    Json bare = {{"name", name}, {"lr", c["optimizer"]["lr"]}};
    EXPECT_EQ(dtbench::optim::make_optimizer(bare, table)->name(), name);
    EXPECT_EQ(dtbench::optim::read_common_options(bare).weight_decay, c["optimizer"]["weight_decay"].get<double>())
        << name;
  }
  for (const std::string& name : dtbench::optim::schedule_names()) {
    const Json c = config::resolve({{"schedule", {{"name", name}}}}, 0);
    auto s = dtbench::optim::make_schedule(c["optimizer"], c["lr_scaling"], c["schedule"], {128, 10, 100});
    EXPECT_EQ(s->name(), name);
  }
}
