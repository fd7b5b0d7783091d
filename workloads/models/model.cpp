#include "workloads/models/model.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "workloads/cpu/softmax_cross_entropy.hpp"
#include "workloads/models/network.hpp"

namespace dtbench::models {

std::string to_string(ParamInfo::Kind kind) {
  switch (kind) {
    case ParamInfo::conv_weight: return "conv_weight";
    case ParamInfo::fc_weight: return "fc_weight";
    case ParamInfo::bias: return "bias";
    case ParamInfo::bn: return "bn";
  }
  return "unknown";
}

size_t ParamLayout::add_param(std::string name, ParamInfo::Kind kind, std::vector<int64_t> shape) {
  size_t size = 1;
  for (int64_t d : shape) size *= size_t(d);
  params_.push_back(ParamInfo{std::move(name), param_count_, size, kind, std::move(shape)});
  param_count_ += size;
  return params_.back().offset;
}

size_t ParamLayout::add_running_stats(const std::string& bn_name, int64_t channels) {
  const size_t offset = buffer_count_;
  buffers_.push_back(ParamInfo{bn_name + ".running_mean", offset, size_t(channels), ParamInfo::bn, {channels}});
  buffers_.push_back(
      ParamInfo{bn_name + ".running_var", offset + size_t(channels), size_t(channels), ParamInfo::bn, {channels}});
  buffer_count_ += 2 * size_t(channels);
  return offset;
}

namespace {

const std::set<std::string> kCifarArchs = {"resnet8", "resnet20", "resnet32", "resnet56"};
const std::set<std::string> kImagenetArchs = {"resnet18", "resnet50"};

bool is_resnet(const std::string& arch) { return kCifarArchs.count(arch) || kImagenetArchs.count(arch); }

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

}  // namespace

// The rule for inputs: every ResNet stage that downsamples halves the resolution, and we require each halving
// to be exact, so the input height and width must be multiples of the total downsampling factor: 4 for the
// CIFAR-style networks (two stride-2 stages; 28 -> 7, 32 -> 8) and 32 for ResNet-18/50 (stride-2 stem, max
// pooling, three stride-2 stages; 224 -> 7). This rejects e.g. ResNet-50 on 28 x 28, whose last stages would
// otherwise work on windows made mostly of padding.
void validate(const ModelSpec& s) {
  const std::string where = "model spec: ";
  if (!is_resnet(s.arch) && s.arch != "mlp") {
    throw BadInput(where + "arch '" + s.arch +
                   "' is unknown (expected resnet8, resnet20, resnet32, resnet56, resnet18, resnet50 or mlp)");
  }
  if (s.precision != "fp32" && s.precision != "bf16") {
    throw BadInput(where + "precision '" + s.precision + "' is unknown (expected fp32 or bf16)");
  }
  if (s.in_c < 1 || s.in_h < 1 || s.in_w < 1) {
    throw BadInput(where + "input shape " + std::to_string(s.in_c) + "x" + std::to_string(s.in_h) + "x" +
                   std::to_string(s.in_w) + " must be positive in every dimension");
  }
  if (s.classes < 2) throw BadInput(where + "classes must be at least 2, got " + std::to_string(s.classes));
  if (!(s.label_smoothing >= 0.0f && s.label_smoothing < 1.0f)) {
    throw BadInput(where + "label_smoothing must be in [0, 1), got " + std::to_string(s.label_smoothing));
  }
  if (!(s.dropout >= 0.0f && s.dropout < 1.0f)) {
    throw BadInput(where + "dropout must be in [0, 1), got " + std::to_string(s.dropout));
  }
  if (s.arch == "mlp") {
    if (s.hidden < 1) throw BadInput(where + "hidden must be at least 1 for arch mlp, got " + std::to_string(s.hidden));
    if (s.zero_init_residual) throw BadInput(where + "zero_init_residual applies only to ResNets, not to arch mlp");
    return;
  }
  if (s.hidden != 0) {
    throw BadInput(where + "hidden applies only to arch mlp, got hidden = " + std::to_string(s.hidden) +
                   " for arch " + s.arch);
  }
  const int factor = kCifarArchs.count(s.arch) ? 4 : 32;
  if (s.in_h % factor != 0 || s.in_w % factor != 0) {
    throw BadInput(where + "input " + std::to_string(s.in_h) + "x" + std::to_string(s.in_w) + " does not fit " +
                   s.arch + ": it downsamples by " + std::to_string(factor) +
                   ", so height and width must be multiples of " + std::to_string(factor) +
                   (factor == 4 ? " (e.g. 28 or 32)" : " (e.g. 224)"));
  }
}

struct Model::Impl {
  struct Entry {
    std::unique_ptr<cpu::Plan> plan;
    dnnl::memory input;  // N x C x H x W plain fp32, owned by the plan
    cpu::SoftmaxCrossEntropy* loss = nullptr;
  };

  ModelSpec spec;
  uint64_t seed;
  cpu::Precision precision;
  ParamLayout layout;
  uint64_t step = 0;  // training forwards so far (dropout streams)
  std::unique_ptr<Network> net;
  AlignedFloats params, grads, buffers;
  cpu::Context ctx;  // declared before the plans, which refer to it
  std::map<std::pair<int, bool>, Entry> plans;
  Entry* last = nullptr;
  bool last_train = false;
  int last_n = 0;
  bool profiling = false;

  Impl(const ModelSpec& s, uint64_t seed_)
      : spec(s),
        seed(seed_),
        precision(s.precision == "bf16" ? cpu::Precision::bf16 : cpu::Precision::fp32),
        net(s.arch == "mlp" ? make_mlp(s, layout, DropoutSource{seed_, &step})
                            : make_resnet(s, layout, DropoutSource{seed_, &step})),
        params(layout.param_count()),
        grads(layout.param_count()),
        buffers(layout.buffer_count()) {}

  void initialise() {
    const auto& table = layout.params();
    for (size_t i = 0; i < table.size(); ++i) {
      const ParamInfo& t = table[i];
      float* w = params.data.get() + t.offset;
      Rng rng(seed, {kInitStream, uint64_t(i)});
      switch (t.kind) {
        case ParamInfo::conv_weight: {
          // He et al. 2015, normal with variance 2 / fan_out (torchvision's mode="fan_out").
          const double fan_out = double(t.shape[0]) * double(t.shape[2]) * double(t.shape[3]);
          const double stddev = std::sqrt(2.0 / fan_out);
          for (size_t k = 0; k < t.size; ++k) w[k] = float(stddev * rng.normal());
          break;
        }
        case ParamInfo::fc_weight:
        case ParamInfo::bias: {
          // PyTorch's nn.Linear default (kaiming_uniform with a = sqrt 5): U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
          // fan_in of the layer the bias belongs to (the weight just before it in the table).
          const ParamInfo& weight = t.kind == ParamInfo::bias ? table[i - 1] : t;
          const double bound = 1.0 / std::sqrt(double(weight.size / size_t(weight.shape[0])));
          for (size_t k = 0; k < t.size; ++k) w[k] = float(bound * (2.0 * rng.uniform() - 1.0));
          break;
        }
        case ParamInfo::bn: {
          const bool gamma = t.name.size() >= 7 && t.name.compare(t.name.size() - 7, 7, ".weight") == 0;
          for (size_t k = 0; k < t.size; ++k) w[k] = gamma ? 1.0f : 0.0f;
          break;
        }
      }
    }
    if (spec.zero_init_residual) {
      for (size_t i : net->last_bn_gammas()) {
        std::fill_n(params.data.get() + table[i].offset, table[i].size, 0.0f);
      }
    }
    for (const ParamInfo& b : layout.buffers()) {
      const bool var = b.name.size() >= 4 && b.name.compare(b.name.size() - 4, 4, "_var") == 0;
      std::fill_n(buffers.data.get() + b.offset, b.size, var ? 1.0f : 0.0f);
    }
  }

  Entry& plan_for(int n, bool train) {
    auto key = std::make_pair(n, train);
    if (auto it = plans.find(key); it != plans.end()) return it->second;
    Entry e;
    e.plan = std::make_unique<cpu::Plan>(ctx, n, train, precision, params.data.get(), grads.data.get(),
                                         buffers.data.get());
    try {
      e.input = e.plan->alloc(cpu::plain_md({n, spec.in_c, spec.in_h, spec.in_w}));
      BuiltNetwork built = net->build(*e.plan, e.input);
      e.loss = &e.plan->keep<cpu::SoftmaxCrossEntropy>(*e.plan, "loss", built.logits, spec.label_smoothing);
      if (train) built.backward(*e.plan, e.loss->backward(*e.plan));
    } catch (const dnnl::error& err) {
      throw RunFailed("model " + spec.arch + ": oneDNN could not build the primitives for batch " +
                      std::to_string(n) + (train ? " (training)" : " (evaluation)") + ": " + err.what());
    }
    e.plan->set_profiling(profiling);
    return plans.emplace(key, std::move(e)).first->second;
  }
};

Model::Model(const ModelSpec& spec, uint64_t seed) {
  validate(spec);
  impl_ = std::make_unique<Impl>(spec, seed);
  impl_->initialise();
}

Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

const ModelSpec& Model::spec() const { return impl_->spec; }
std::span<float> Model::params() { return {impl_->params.data.get(), impl_->params.size}; }
std::span<float> Model::grads() { return {impl_->grads.data.get(), impl_->grads.size}; }
std::span<float> Model::buffers() { return {impl_->buffers.data.get(), impl_->buffers.size}; }
const std::vector<ParamInfo>& Model::param_table() const { return impl_->layout.params(); }
const std::vector<ParamInfo>& Model::buffer_table() const { return impl_->layout.buffers(); }

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

void Model::backward(const cpu::OnReady& on_ready) {
  if (impl_->last == nullptr || !impl_->last_train) {
    throw std::logic_error("model: backward() needs a training forward first");
  }
  impl_->last->plan->run_backward(on_ready);
}

double Model::macs_per_sample() const { return impl_->net->macs_per_sample(); }
double Model::flops_per_sample_train() const { return 6.0 * impl_->net->macs_per_sample(); }

void Model::set_cross_replica_sum(cpu::CrossReplicaSum sum) {
  for (auto it = impl_->plans.begin(); it != impl_->plans.end();) {
    if (impl_->last == &it->second) impl_->last = nullptr;
    it = it->first.second ? impl_->plans.erase(it) : std::next(it);
  }
  impl_->ctx.cross_replica_sum = std::move(sum);
}

void Model::set_profiling(bool on) {
  impl_->profiling = on;
  for (auto& [key, e] : impl_->plans) e.plan->set_profiling(on);
}

std::vector<cpu::OpTime> Model::profile(int n, bool train) const {
  auto it = impl_->plans.find({n, train});
  return it == impl_->plans.end() ? std::vector<cpu::OpTime>{} : it->second.plan->profile();
}

size_t Model::num_reorders(int n, bool train) const {
  auto it = impl_->plans.find({n, train});
  return it == impl_->plans.end() ? 0 : it->second.plan->num_reorders();
}

}  // namespace dtbench::models
