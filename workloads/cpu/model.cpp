#include "workloads/cpu/model.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "core/error.hpp"
#include "workloads/cpu/network.hpp"
#include "workloads/cpu/softmax_cross_entropy.hpp"
#include "workloads/cpu/split_layer.hpp"
#include "workloads/models/pipeline_units.hpp"

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
    dnnl::memory input;  // the stage's input (N x C x H x W images on the first), plain fp32, owned by the plan
    SoftmaxCrossEntropy* loss = nullptr;  // on the last pipeline stage (always without pipeline parallelism)
    // Earlier pipeline stages: the output in plain fp32, and the gradient the next stage sends back for it.
    dnnl::memory output, output_grad;
    dnnl::memory input_grad;  // later pipeline stages, training: the gradient of the input in plain fp32
  };
  struct Key {
    int n;
    bool train;
    int slot;
    bool operator<(const Key& o) const { return std::tie(n, train, slot) < std::tie(o.n, o.train, o.slot); }
  };

  models::ModelSpec spec;
  Precision precision;
  models::ModelDescription desc;
  models::TableIndex index{desc};
  models::BatchPosition position;  // of the next training forward (dropout masks); set_batch_position
  bool position_set = false;       // since the last training forward: dropout refuses a stale position
  std::unique_ptr<Network> net;
  AlignedFloats params, grads, buffers;
  Context ctx;  // declared before the plans, which refer to it
  std::map<Key, Entry> plans;
  int slot = 0;  // Model::set_slot
  std::map<int, Entry*> last;  // the last forward's entry of each slot
  Entry* latest = nullptr;     // the last forward's entry of any slot
  bool last_train = false;
  int last_n = 0;
  bool profiling = false;

  Impl(const models::ModelSpec& s, uint64_t seed)
      : spec(s),
        precision(s.precision == "bf16" ? Precision::bf16 : Precision::fp32),
        desc(models::describe(s)),
        net(make_network(s, index, DropoutSource{seed, &position})),
        params(desc.param_count()),
        grads(desc.param_count()),
        buffers(desc.buffer_count()) {
    models::initialise(spec, desc, seed, {params.data.get(), params.size}, {buffers.data.get(), buffers.size});
  }

  static dnnl::memory::dims batch_dims(int n, const std::vector<int64_t>& per_image) {
    dnnl::memory::dims d{n};
    d.insert(d.end(), per_image.begin(), per_image.end());
    return d;
  }

  Entry& plan_for(int n, bool train) {
    const Key key{n, train, slot};
    if (auto it = plans.find(key); it != plans.end()) return it->second;
    Entry e;
    e.plan = std::make_unique<Plan>(ctx, n, train, precision, params.data.get(), grads.data.get(), buffers.data.get());
    const bool first = models::first_stage(spec), last_stage = models::last_stage(spec);
    try {
      e.input = e.plan->alloc(plain_md(batch_dims(n, models::unit_input_dims(spec, first ? 0 : spec.first_unit))));
      BuiltNetwork built = net->build(*e.plan, e.input);
      dnnl::memory dy;
      if (last_stage) {
        e.loss = &e.plan->keep<SoftmaxCrossEntropy>(*e.plan, "loss", built.output, spec.label_smoothing);
        if (train) dy = e.loss->backward(*e.plan);
      } else {
        const dnnl::memory::desc out_md = plain_md(batch_dims(n, models::unit_input_dims(spec, spec.end_unit)));
        e.output = e.plan->forward_as(built.output, out_md, "stage.output");
        if (train) dy = e.output_grad = e.plan->alloc(out_md);
      }
      if (train) {
        const dnnl::memory dx = built.backward(*e.plan, dy);
        if (!first) e.input_grad = e.plan->backward_as(dx, e.input.get_desc(), "stage.input_grad");
      }
    } catch (const dnnl::error& err) {
      throw RunFailed("model " + spec.arch + ": oneDNN could not build the primitives for batch " +
                      std::to_string(n) + (train ? " (training)" : " (evaluation)") + ": " + err.what());
    }
    e.plan->set_profiling(profiling);
    return plans.emplace(key, std::move(e)).first->second;
  }

  Entry& last_of_slot(const char* what) {
    auto it = last.find(slot);
    if (it == last.end() || it->second == nullptr) throw std::logic_error(std::string("model: ") + what + " before any forward");
    return *it->second;
  }

  void forget_plans(bool training_only) {
    for (auto it = plans.begin(); it != plans.end();)
      it = !training_only || it->first.train ? plans.erase(it) : std::next(it);
    last.clear();
    latest = nullptr;
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

void Model::set_batch_position(const models::BatchPosition& at) {
  impl_->position = at;
  impl_->position_set = true;
}

double Model::forward(const float* x, const int32_t* labels, int n, bool train) {
  if (n < 1) throw BadInput("model forward: the batch must hold at least 1 image, got " + std::to_string(n));
  if (x == nullptr || labels == nullptr) throw BadInput("model forward: no input or no labels given");
  for (int i = 0; i < n; ++i) {
    if (labels[i] < 0 || labels[i] >= impl_->spec.classes) {
      throw BadInput("model forward: label " + std::to_string(labels[i]) + " of image " + std::to_string(i) +
                     " is outside [0, " + std::to_string(impl_->spec.classes) + ")");
    }
  }
  // A forgotten position would silently repeat the previous forward's masks.
  if (train && impl_->spec.dropout > 0.0f && !impl_->position_set)
    throw std::logic_error("model forward: a training forward with dropout needs set_batch_position first");
  Impl::Entry& e = impl_->plan_for(n, train);
  std::memcpy(e.input.get_data_handle(), x, e.input.get_desc().get_size());
  if (e.loss != nullptr) e.loss->set_labels(labels);
  impl_->last[impl_->slot] = &e;
  impl_->latest = &e;
  impl_->last_train = train;
  impl_->last_n = n;
  e.plan->run_forward();
  if (train) impl_->position_set = false;
  return e.loss != nullptr ? e.loss->loss() : 0.0;
}

const float* Model::logits() const {
  if (impl_->latest == nullptr) throw std::logic_error("model: logits() before any forward");
  if (impl_->latest->loss == nullptr) throw std::logic_error("model: logits() on a pipeline stage before the last");
  return impl_->latest->loss->logits();
}

int Model::correct() const {
  return impl_->latest == nullptr || impl_->latest->loss == nullptr ? 0 : impl_->latest->loss->correct();
}
int Model::last_batch() const { return impl_->last_n; }

void Model::backward(const OnReady& on_ready, const OnLayerActivity& on_activity) {
  Impl::Entry& e = impl_->last_of_slot("backward()");
  if (!e.plan->training()) throw std::logic_error("model: backward() needs a training forward first");
  e.plan->run_backward(on_ready, on_activity);
}

void Model::set_slot(int slot) {
  if (slot < 0) throw std::logic_error("model: negative plan slot");
  impl_->slot = slot;
}

const float* Model::stage_output() {
  Impl::Entry& e = impl_->last_of_slot("stage_output()");
  if (!e.output) throw std::logic_error("model: stage_output() on the last pipeline stage");
  return static_cast<const float*>(e.output.get_data_handle());
}

void Model::set_output_gradient(const float* dy) {
  Impl::Entry& e = impl_->last_of_slot("set_output_gradient()");
  if (!e.output_grad) throw std::logic_error("model: set_output_gradient() needs a training forward of an earlier stage");
  std::memcpy(e.output_grad.get_data_handle(), dy, e.output_grad.get_desc().get_size());
}

const float* Model::input_gradient() {
  Impl::Entry& e = impl_->last_of_slot("input_gradient()");
  if (!e.input_grad) throw std::logic_error("model: input_gradient() needs a training plan of a later pipeline stage");
  return static_cast<const float*>(e.input_grad.get_data_handle());
}

size_t Model::stage_output_floats(int n) const {
  if (models::last_stage(impl_->spec)) return 0;
  return num_elements(plain_md(Impl::batch_dims(n, models::unit_input_dims(impl_->spec, impl_->spec.end_unit))));
}
size_t Model::stage_input_floats(int n) const {
  const int u = models::first_stage(impl_->spec) ? 0 : impl_->spec.first_unit;
  return num_elements(plain_md(Impl::batch_dims(n, models::unit_input_dims(impl_->spec, u))));
}

std::vector<double> Model::unit_seconds(int n) const {
  std::vector<double> seconds;
  for (const OpTime& op : profile(n, true)) {
    // The input's reorders (no unit): the stage's first unit's.
    const size_t u = static_cast<size_t>(std::max(op.unit, models::first_stage(impl_->spec) ? 0 : impl_->spec.first_unit));
    if (seconds.size() <= u) seconds.resize(u + 1, 0.0);
    seconds[u] += op.min_seconds;
  }
  return seconds;
}

double Model::macs_per_sample() const { return impl_->desc.macs_per_sample; }
double Model::flops_per_sample_train() const { return impl_->desc.flops_per_sample_train(); }
double Model::rank_flops_per_sample_train() const { return impl_->desc.rank_flops_per_sample_train(); }

void Model::set_cross_replica_sum(CrossReplicaSum sum) {
  impl_->forget_plans(true);
  impl_->ctx.cross_replica_sum = std::move(sum);
}

void Model::set_model_parallel_group(ModelParallelGroup group) {
  if (group.size != impl_->spec.shards || group.rank != impl_->spec.shard)
    throw std::logic_error("model: the model-parallel group does not match the spec's shards");
  impl_->forget_plans(false);
  impl_->ctx.model_parallel = std::move(group);
}

void Model::set_profiling(bool on) {
  impl_->profiling = on;
  for (auto& [key, e] : impl_->plans) e.plan->set_profiling(on);
}

std::vector<OpTime> Model::profile(int n, bool train) const {
  auto it = impl_->plans.find({n, train, 0});
  return it == impl_->plans.end() ? std::vector<OpTime>{} : it->second.plan->profile();
}

size_t Model::num_reorders(int n, bool train) const {
  auto it = impl_->plans.find({n, train, 0});
  return it == impl_->plans.end() ? 0 : it->second.plan->num_reorders();
}

size_t Model::plan_bytes(int n, bool train) const {
  auto it = impl_->plans.find({n, train, 0});
  return it == impl_->plans.end() ? 0 : it->second.plan->held_bytes();
}

size_t Model::training_plan_bytes() const {
  // The slots of one batch size are in use together (a pipeline's micro-batches in flight): their sum, for the
  // largest batch size's.
  std::map<int, size_t> by_batch;
  for (const auto& [key, e] : impl_->plans)
    if (key.train) by_batch[key.n] += e.plan->held_bytes();
  size_t most = 0;
  for (const auto& [n, bytes] : by_batch) most = std::max(most, bytes);
  return most + split_layer_scratch_bytes();  // model parallelism's exchange buffer, shared by the plans
}

}  // namespace dtbench::cpu
