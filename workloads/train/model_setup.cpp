#include "workloads/train/model_setup.hpp"

#include <algorithm>

#include "config/run_config.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "workloads/models/checkpointing.hpp"
#include "workloads/models/model_description.hpp"

namespace dtbench {
namespace {

models::ModelSpec model_spec(const Json& cfg, const data::Dataset& train) {
  models::ModelSpec spec;
  spec.arch = cfg["model"]["arch"].get<std::string>();
  spec.in_c = train.channels;
  spec.in_h = train.height;
  spec.in_w = train.width;
  spec.classes = train.classes;
  spec.zero_init_residual = cfg["model"]["zero_init_residual"].get<bool>();
  spec.precision = cfg["precision"].get<std::string>();
  const Json& model = cfg["model"];  // hidden and conv_filters exist only for the archs that have them
  if (model.contains("hidden")) spec.hidden = static_cast<int>(model["hidden"].get<int64_t>());
  if (model.contains("conv_filters")) {
    for (const Json& f : model["conv_filters"]) spec.conv_filters.push_back(static_cast<int>(f.get<int64_t>()));
  }
  spec.label_smoothing = cfg["model"]["label_smoothing"].get<float>();
  spec.dropout = cfg["model"]["dropout"].get<float>();
  spec.ghost_batch = static_cast<int>(cfg["model"]["ghost_batch"].get<int64_t>());
  if (cfg["model"]["checkpointing"].get<bool>()) {
    const int64_t segments = cfg["model"]["checkpoint_segments"].get<int64_t>();
    spec.checkpoint_segments = segments > 0 ? static_cast<int>(segments)
                                            : models::default_checkpoint_segments(models::checkpoint_units(spec));
  }
  return spec;
}

// The weights and gradients of `spec` (described as `d`) on the `node_ranks` ranks of this machine, fp32, 8 bytes a
// parameter at the least (before any optimizer state or activation); BadInput naming /model when they exceed its
// memory, which a machine without that much would meet as the kernel's OOM kill well into the set-up (a 16 GB MLP
// head was). Returns the bytes.
double check_weights_fit(const models::ModelSpec& spec, const models::ModelDescription& d, int node_ranks) {
  const double params = static_cast<double>(d.param_count());
  const double memory = physical_memory_bytes();
  const double need = 8 * params * node_ranks;
  if (memory > 0 && need > memory)
    throw BadInput("/model: arch \"" + spec.arch + "\" on this data has " + std::to_string(static_cast<int64_t>(params)) +
                   " parameters" + (spec.shards > 1 || spec.stages > 1 ? " on each rank" : "") + ": their weights and "
                   "gradients alone take " + std::to_string(static_cast<int64_t>(need / 1e9)) + " GB for the " +
                   std::to_string(node_ranks) + " rank(s) on this machine, which has " +
                   std::to_string(static_cast<int64_t>(memory / 1e9)) + " GB" + memory_limit_note());
  return need;
}

// `node_ranks`: the ranks sharing this machine's memory; `micro_batch`: the images of one forward and backward
// pass on a rank (the per-rank batch over its micro-batches); `eval_batch`: the largest batch of an evaluation,
// made by `eval_node_ranks` of them (asynchronous SGD's rank 0 evaluates alone, the whole set).
void validate_spec(const models::ModelSpec& spec, bool gpu, int node_ranks, int64_t micro_batch, int64_t eval_batch,
                   int eval_node_ranks) {
#ifdef DTBENCH_HAVE_CUDA
  if (gpu) return validate_gpu_model_spec(spec);
#endif
  (void)gpu;
  models::validate(spec);
  // Before any primitive is built: an AVX2-only CPU failed every bf16 model as "oneDNN could not build the
  // primitives" (exit 1), well into the set-up.
  if (spec.precision == "bf16" && !cpu_has_bf16_primitives())
    throw BadInput("/precision: \"bf16\" on the cpu backend needs AVX-512 (oneDNN builds bf16 primitives on "
                   "avx512_core and newer); this CPU's instruction set is " + cpu_isa() +
                   ": use \"fp32\", or the gpu backend");
  // With model parallelism, describe() also checks that every split layer has a unit for every rank (the same
  // answer on every rank: it depends on the widths and the group's size only). It computes the tables only, so
  // the parameters' memory is known before any is allocated: fp32 weights and gradients at the least (8 bytes a
  // parameter, before any optimizer state or activation) on each rank of this machine, which a machine without
  // that much memory would meet as the kernel's OOM kill well into the set-up (a 16 GB MLP head was).
  const models::ModelDescription d = models::describe(spec);
  const double need = check_weights_fit(spec, d, node_ranks);
  const double memory = physical_memory_bytes();
  // The activations, where one rank holds whole layers (no tensor or pipeline split): the layers' outputs of a
  // forward pass at the least, 4 bytes each (2 in bf16), kept for the backward pass, plus one output's gradient; with gradient
  // checkpointing the largest output and its gradient at the least. A lower bound (the plan also keeps batch norm
  // and ReLU outputs and workspaces), so it refuses only what cannot fit, before any of it is allocated: 4096 x
  // 4096 images failed well into the set-up as an out-of-memory error (exit 1).
  if (spec.shards > 1 || spec.stages > 1 || memory <= 0) return;
  const double value_bytes = spec.precision == "fp32" ? 4 : 2;  // bf16 activations take 2
  const double per_image = value_bytes * (spec.checkpoint_segments > 0 ? 2 * d.largest_layer_output_floats
                                                              : d.layer_output_floats_per_sample + d.largest_layer_output_floats);
  const double activations = per_image * static_cast<double>(micro_batch);
  if (need + activations * node_ranks > memory)
    throw BadInput("/batch: arch \"" + spec.arch + "\" on " + std::to_string(spec.in_c) + " x " +
                   std::to_string(spec.in_h) + " x " + std::to_string(spec.in_w) + " images keeps at least " +
                   bytes_text(per_image) + " of activations an image (its layers' outputs alone), " +
                   bytes_text(activations) + " for a batch of " + std::to_string(micro_batch) + " per rank" +
                   (node_ranks > 1 ? ", " + bytes_text(activations * node_ranks) + " for the " +
                                         std::to_string(node_ranks) + " ranks on this machine"
                                   : std::string()) +
                   ", with " + bytes_text(need) + " of weights and gradients: more than this machine's " +
                   bytes_text(memory) + " (a smaller batch, /batch/micro_batches or /model/checkpointing need less)");
  // The evaluation plan of its batch is kept beside the training plan (model.cpp keeps a plan per batch size and
  // kind) and holds every layer's output too, without gradients and checkpointing.
  const double eval_activations = value_bytes * d.layer_output_floats_per_sample * static_cast<double>(eval_batch);
  if (need + activations * node_ranks + eval_activations * eval_node_ranks > memory)
    throw BadInput("/eval/batch: an evaluation batch of " + std::to_string(eval_batch) + " per rank keeps at least " +
                   bytes_text(eval_activations) + " of activations (arch \"" + spec.arch + "\" on " +
                   std::to_string(spec.in_c) + " x " + std::to_string(spec.in_h) + " x " + std::to_string(spec.in_w) +
                   " images), beside the training pass's " + bytes_text(activations) + " and " + bytes_text(need) +
                   " of weights and gradients" +
                   (eval_node_ranks > 1 ? " on each of the " + std::to_string(eval_node_ranks) + " ranks on this machine"
                                        : std::string()) +
                   ": more than its " + bytes_text(memory) + " (a smaller /eval/batch needs less)");
}

std::unique_ptr<TrainModel> build(const models::ModelSpec& spec, uint64_t seed, const Json& cfg, int rank) {
  if (cfg["backend"] == "gpu") {
#ifdef DTBENCH_HAVE_CUDA
    return make_gpu_train_model(spec, seed, rank, cfg["optimizer"]);
#else
    (void)rank;
    throw BadInput("/backend: \"gpu\" but this dtbench was built without CUDA");
#endif
  }
  return make_cpu_train_model(spec, seed, cfg["optimizer"]);
}

}  // namespace

models::ModelSpec train_model_spec(const Json& cfg, const data::Dataset& train, const ModelParallel* model_parallel) {
  models::ModelSpec spec = model_spec(cfg, train);
  if (model_parallel && model_parallel->form() == ModelParallel::Form::tensor)
    spec.shards = model_parallel->group_size(), spec.shard = model_parallel->shard();
  if (model_parallel && model_parallel->form() == ModelParallel::Form::pipeline) {
    spec.stages = model_parallel->group_size(), spec.stage = model_parallel->shard();
    const auto [first, end] = model_parallel->stage_units().at(static_cast<size_t>(spec.stage));
    spec.first_unit = first, spec.end_unit = end;
    // Gradient checkpointing per stage: /model/checkpoint_segments of the stage's own checkpoint units (at most one
    // per unit; 0: the square root of their count), none on a stage that holds none (a ResNet's head alone).
    if (cfg["model"]["checkpointing"].get<bool>()) {
      const int held = std::max(0, std::min(end, models::checkpoint_units(spec)) - first);
      const int64_t asked = cfg["model"]["checkpoint_segments"].get<int64_t>();
      spec.checkpoint_segments = held == 0  ? 0
                                 : asked > 0 ? static_cast<int>(std::min<int64_t>(asked, held))
                                             : models::default_checkpoint_segments(held);
    }
  }
  return spec;
}

void check_synthetic_fits(const Json& cfg, const ModelParallel* model_parallel, int node_ranks) {
  const Json& s = cfg["data"]["synthetic"];
  data::Dataset shape;  // the set's shape, no images
  shape.channels = static_cast<int>(s["channels"].get<int64_t>());
  shape.height = static_cast<int>(s["height"].get<int64_t>());
  shape.width = static_cast<int>(s["width"].get<int64_t>());
  shape.classes = static_cast<int>(s["classes"].get<int64_t>());
  const double bytes = static_cast<double>(shape.image_bytes()) *
                       static_cast<double>(s["train_size"].get<int64_t>() + s["test_size"].get<int64_t>());
  const double memory = physical_memory_bytes();
  if (memory > 0 && bytes * node_ranks > memory)
    throw BadInput("/data/synthetic: the training and test images take " + bytes_text(bytes) +
                   (node_ranks > 1 ? " on each of the " + std::to_string(node_ranks) + " ranks on this machine (each "
                                     "makes the whole set), " + bytes_text(bytes * node_ranks) + " in all"
                                   : std::string()) +
                   ", more than its " + bytes_text(memory) + memory_limit_note());
  // The model on the set's shape, before the set is made: its weights' check waited for minutes of generation. A
  // pipeline's stages are cut by measuring the model on the data, later; the gpu backend checks its own.
  if (cfg["backend"] == "gpu" || (model_parallel && model_parallel->form() == ModelParallel::Form::pipeline)) return;
  const models::ModelSpec spec = train_model_spec(cfg, shape, model_parallel);
  models::validate(spec);
  check_weights_fit(spec, models::describe(spec), node_ranks);
}

std::unique_ptr<TrainModel> make_train_model(const Json& cfg, const data::Dataset& train, const World& world,
                                             ModelParallel* model_parallel, int node_ranks, int64_t eval_batch,
                                             int eval_node_ranks) {
  const models::ModelSpec spec = train_model_spec(cfg, train, model_parallel);
  // Every rank has the same config and data shape, so a spec the network cannot take fails alike on all of
  // them: one message and exit 2, not one abort per rank.
  const int64_t micro_batch = config::per_rank_batch(cfg, world.size()) / cfg["batch"]["micro_batches"].get<int64_t>();
  world.on_every_rank([&] {
    validate_spec(spec, cfg["backend"] == "gpu", node_ranks, micro_batch, eval_batch, eval_node_ranks);
  });
  auto model = build(spec, static_cast<uint64_t>(cfg["seed"].get<int64_t>()), cfg, world.rank());
  // Every rank built the same weights from the same seed; broadcasting rank 0's makes that a fact rather
  // than an assumption (and covers models initialised from anything else).
  if (model_parallel) {
    if (model_parallel->form() == ModelParallel::Form::tensor) model->set_model_parallel_group(model_parallel->group());
    model_parallel->broadcast_from_first_replica(model->host_params());  // shards (stages) differ within a replica
  } else {
    world.broadcast(model->host_params());
  }
  // A pipeline's stages hold their own batch norms' statistics; a tensor group's ranks all of them.
  if (model_parallel && model_parallel->form() == ModelParallel::Form::pipeline)
    model_parallel->broadcast_from_first_replica(model->host_buffers());
  else
    world.broadcast(model->host_buffers());
  model->push_host_params();
  model->push_host_buffers();
  return model;
}

}  // namespace dtbench
