#include "workloads/cpu/model.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <utility>

#include "core/error.hpp"
#include "workloads/cpu/network.hpp"
#include "workloads/cpu/softmax_cross_entropy.hpp"
#include "workloads/cpu/split_layer.hpp"

namespace dtbench::cpu {

namespace {

// 64-byte aligned, zero-initialised floats (the flat buffers oneDNN reads through zero-copy views).
struct AlignedFloats {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> data;
  size_t size = 0;
  explicit AlignedFloats(size_t n) : size(n) {
    const size_t bytes = ((std::max<size_t>(n, 1) * sizeof(float) + 63) / 64) * 64;
    data.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    if (!data) throw std::bad_alloc();
    std::memset(data.get(), 0, bytes);
  }
};

std::unique_ptr<Network> make_network(const models::ModelSpec& s, const models::TableIndex& index,
                                      DropoutSource dropout) {
  if (s.arch == "mlp") return make_mlp(s, index, dropout);
  if (s.arch == "simple_cnn") return make_simple_cnn(s, index, dropout);
  return make_resnet(s, index, dropout);
}

}  // namespace

struct Model::Impl {
  struct Entry {
    std::unique_ptr<Plan> plan;
    dnnl::memory input;  // N x C x H x W plain fp32, owned by the plan
    SoftmaxCrossEntropy* loss = nullptr;
  };

  models::ModelSpec spec;
  Precision precision;
  models::ModelDescription desc;
  models::TableIndex index{desc};
  uint64_t step = 0;  // training forwards so far (dropout streams)
  std::unique_ptr<Network> net;
  AlignedFloats params, grads, buffers;
  Context ctx;  // declared before the plans, which refer to it
  std::map<std::pair<int, bool>, Entry> plans;
  Entry* last = nullptr;
  bool last_train = false;
  int last_n = 0;
  bool profiling = false;

  Impl(const models::ModelSpec& s, uint64_t seed)
      : spec(s),
        precision(s.precision == "bf16" ? Precision::bf16 : Precision::fp32),
        desc(models::describe(s)),
        net(make_network(s, index, DropoutSource{seed, &step})),
        params(desc.param_count()),
        grads(desc.param_count()),
        buffers(desc.buffer_count()) {
    models::initialise(spec, desc, seed, {params.data.get(), params.size}, {buffers.data.get(), buffers.size});
  }

  Entry& plan_for(int n, bool train) {
    auto key = std::make_pair(n, train);
    if (auto it = plans.find(key); it != plans.end()) return it->second;
    Entry e;
    e.plan = std::make_unique<Plan>(ctx, n, train, precision, params.data.get(), grads.data.get(), buffers.data.get());
    try {
      e.input = e.plan->alloc(plain_md({n, spec.in_c, spec.in_h, spec.in_w}));
      BuiltNetwork built = net->build(*e.plan, e.input);
      e.loss = &e.plan->keep<SoftmaxCrossEntropy>(*e.plan, "loss", built.logits, spec.label_smoothing);
      if (train) built.backward(*e.plan, e.loss->backward(*e.plan));
    } catch (const dnnl::error& err) {
      throw RunFailed("model " + spec.arch + ": oneDNN could not build the primitives for batch " +
                      std::to_string(n) + (train ? " (training)" : " (evaluation)") + ": " + err.what());
    }
    e.plan->set_profiling(profiling);
    return plans.emplace(key, std::move(e)).first->second;
  }
};

Model::Model(const models::ModelSpec& spec, uint64_t seed) : impl_(std::make_unique<Impl>(spec, seed)) {}

Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

const models::ModelSpec& Model::spec() const { return impl_->spec; }
std::span<float> Model::params() { return {impl_->params.data.get(), impl_->params.size}; }
std::span<float> Model::grads() { return {impl_->grads.data.get(), impl_->grads.size}; }
std::span<float> Model::buffers() { return {impl_->buffers.data.get(), impl_->buffers.size}; }
const std::vector<models::ParamInfo>& Model::param_table() const { return impl_->desc.params; }
const std::vector<models::ParamInfo>& Model::buffer_table() const { return impl_->desc.buffers; }

double Model::forward(const float* x, const int32_t* labels, int n, bool train) {
  if (n < 1) throw BadInput("model forward: the batch must hold at least 1 image, got " + std::to_string(n));
  if (x == nullptr || labels == nullptr) throw BadInput("model forward: no input or no labels given");
  for (int i = 0; i < n; ++i) {
    if (labels[i] < 0 || labels[i] >= impl_->spec.classes) {
      throw BadInput("model forward: label " + std::to_string(labels[i]) + " of image " + std::to_string(i) +
                     " is outside [0, " + std::to_string(impl_->spec.classes) + ")");
    }
  }
  Impl::Entry& e = impl_->plan_for(n, train);
  std::memcpy(e.input.get_data_handle(), x, e.input.get_desc().get_size());
  e.loss->set_labels(labels);
  if (train) ++impl_->step;
  impl_->last = &e;
  impl_->last_train = train;
  impl_->last_n = n;
  e.plan->run_forward();
  return e.loss->loss();
}

const float* Model::logits() const {
  if (impl_->last == nullptr) throw std::logic_error("model: logits() before any forward");
  return impl_->last->loss->logits();
}

int Model::correct() const { return impl_->last == nullptr ? 0 : impl_->last->loss->correct(); }
int Model::last_batch() const { return impl_->last_n; }

void Model::backward(const OnReady& on_ready, const OnLayerActivity& on_activity) {
  if (impl_->last == nullptr || !impl_->last_train) {
    throw std::logic_error("model: backward() needs a training forward first");
  }
  impl_->last->plan->run_backward(on_ready, on_activity);
}

double Model::macs_per_sample() const { return impl_->desc.macs_per_sample; }
double Model::flops_per_sample_train() const { return impl_->desc.flops_per_sample_train(); }
double Model::rank_flops_per_sample_train() const { return impl_->desc.rank_flops_per_sample_train(); }

void Model::set_cross_replica_sum(CrossReplicaSum sum) {
  for (auto it = impl_->plans.begin(); it != impl_->plans.end();) {
    if (impl_->last == &it->second) impl_->last = nullptr;
    it = it->first.second ? impl_->plans.erase(it) : std::next(it);
  }
  impl_->ctx.cross_replica_sum = std::move(sum);
}

void Model::set_model_parallel_group(ModelParallelGroup group) {
  if (group.size != impl_->spec.shards || group.rank != impl_->spec.shard)
    throw std::logic_error("model: the model-parallel group does not match the spec's shards");
  impl_->plans.clear();
  impl_->last = nullptr;
  impl_->ctx.model_parallel = std::move(group);
}

void Model::set_profiling(bool on) {
  impl_->profiling = on;
  for (auto& [key, e] : impl_->plans) e.plan->set_profiling(on);
}

std::vector<OpTime> Model::profile(int n, bool train) const {
  auto it = impl_->plans.find({n, train});
  return it == impl_->plans.end() ? std::vector<OpTime>{} : it->second.plan->profile();
}

size_t Model::num_reorders(int n, bool train) const {
  auto it = impl_->plans.find({n, train});
  return it == impl_->plans.end() ? 0 : it->second.plan->num_reorders();
}

size_t Model::plan_bytes(int n, bool train) const {
  auto it = impl_->plans.find({n, train});
  return it == impl_->plans.end() ? 0 : it->second.plan->held_bytes();
}

size_t Model::training_plan_bytes() const {
  size_t most = 0;
  for (const auto& [key, e] : impl_->plans)
    if (key.second) most = std::max(most, e.plan->held_bytes());
  return most + split_layer_scratch_bytes();  // model parallelism's exchange buffer, shared by the plans
}

}  // namespace dtbench::cpu
