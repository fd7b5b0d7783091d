#include "workloads/gpu/gpu_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <utility>

#include "core/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "workloads/gpu/context.hpp"
#include "workloads/gpu/kernels.hpp"
#include "workloads/gpu/network.hpp"
#include "workloads/gpu/softmax_cross_entropy.hpp"
#include "workloads/models/model_description.hpp"
#include "workloads/models/table_index.hpp"

namespace dtbench::gpu {

void validate(const models::ModelSpec& spec) {
  if (spec.ghost_batch != 0) {
    throw BadInput("/model/ghost_batch: ghost batch norm is built by the cpu backend only; use /backend \"cpu\"");
  }
  if (spec.checkpoint_segments != 0) {
    throw BadInput("/model/checkpointing: gradient checkpointing is built by the cpu backend only; use /backend \"cpu\"");
  }
  parse_precision(spec.precision, "model spec");
  models::ModelSpec fp32 = spec;
  fp32.precision = "fp32";
  models::validate(fp32);
}

namespace {

// What a model starts from: the backend-neutral description (tables in the canonical layout, MACs) and the
// initial weights and running statistics, the same numbers the CPU backend starts from.
struct InitialState {
  models::ModelDescription desc;
  std::vector<float> params, buffers;
};

InitialState initial_state(const models::ModelSpec& spec, uint64_t seed) {
  models::ModelSpec fp32 = spec;  // the description and weights do not depend on the compute precision
  fp32.precision = "fp32";
  InitialState s{models::describe(fp32), {}, {}};
  s.params.resize(s.desc.param_count());
  s.buffers.resize(s.desc.buffer_count());
  models::initialise(spec, s.desc, seed, s.params, s.buffers);
  return s;
}

}  // namespace

struct GpuModel::Impl {
  struct Entry {
    std::unique_ptr<GpuPlan> plan;
    Tensor input;    // N x C x H x W fp32 (what the caller hands in)
    Tensor input_c;  // the same in the compute precision (== input in fp32)
    SoftmaxCrossEntropy* loss = nullptr;
  };

  models::ModelSpec spec;
  Precision precision;
  models::BatchPosition position;  // of the next training forward (dropout masks); set_batch_position
  bool position_set = false;       // since the last training forward: dropout refuses a stale position
  models::ModelDescription desc;  // tables and MACs; outlives `index`
  std::unique_ptr<models::TableIndex> index;
  std::unique_ptr<Network> net;
  GpuContext ctx;  // declared before the buffers and plans that use its stream (see ~Impl)
  DeviceBuffer params, grads, buffers, params_c, grads_c;
  WeightBuffers weights;
  std::map<std::pair<int, bool>, Entry> plans;
  Entry* last = nullptr;
  bool last_train = false;
  int last_n = 0;
  float loss_scale = 1.0f;
  PinnedBuffer staging_x, staging_y;
  std::vector<float> host_logits;
  DeviceBuffer scratch;    // kSumBlocks + 1 doubles, then a uint32 flag
  DeviceBuffer norm_slots;  // range_norm_sq's doubles, one per parameter tensor (made on first use)
  PinnedBuffer host_scratch;

  Impl(const models::ModelSpec& s, uint64_t seed) : spec(s), precision(parse_precision(s.precision, "model spec")) {
    InitialState init = initial_state(s, seed);
    desc = std::move(init.desc);
    index = std::make_unique<models::TableIndex>(desc);
    const DropoutSource dropout{seed, &position};
    net = s.arch == "mlp"          ? make_mlp(s, *index, dropout)
          : s.arch == "simple_cnn" ? make_simple_cnn(s, *index, dropout)
                                   : make_resnet(s, *index, dropout);

    const size_t np = init.params.size(), nb = init.buffers.size();
    params = DeviceBuffer(np * sizeof(float));
    grads = DeviceBuffer(np * sizeof(float));
    buffers = DeviceBuffer(std::max<size_t>(nb, 1) * sizeof(float));
    copy_to_device(params.get(), init.params.data(), np * sizeof(float), ctx.stream());
    copy_to_device(buffers.get(), init.buffers.data(), nb * sizeof(float), ctx.stream());
    weights.params = params.as<float>();
    weights.grads = grads.as<float>();
    weights.buffers = buffers.as<float>();
    if (precision == Precision::fp32) {
      weights.params_c = params.get();
      weights.grads_c = grads.get();
    } else {
      params_c = DeviceBuffer(np * element_size(precision));
      grads_c = DeviceBuffer(np * element_size(precision));
      weights.params_c = params_c.get();
      weights.grads_c = grads_c.get();
    }
    scratch = DeviceBuffer((kernels::kSumBlocks + 1) * sizeof(double) + sizeof(unsigned int));
    host_scratch = PinnedBuffer(sizeof(double) + sizeof(unsigned int));
  }
  // The members go after this body, in reverse order: the plans, buffers and pinned staging first, ctx (whose
  // own synchronise would come too late for them) last; the work queued on the stream must be done first.
  ~Impl() { cudaStreamSynchronize(ctx.stream()); }

  size_t param_count() const { return params.bytes() / sizeof(float); }
  size_t buffer_count() const {
    size_t n = 0;
    for (const auto& b : desc.buffers) n = std::max(n, b.offset + b.size);
    return n;
  }
  size_t image_floats() const { return size_t(spec.in_c) * size_t(spec.in_h) * size_t(spec.in_w); }

  Entry& plan_for(int n, bool train) {
    const auto key = std::make_pair(n, train);
    if (auto it = plans.find(key); it != plans.end()) return it->second;
    Entry e;
    e.plan = std::make_unique<GpuPlan>(ctx, n, train, precision, weights);
    GpuPlan& plan = *e.plan;
    e.input = plan.alloc(n, spec.in_c, spec.in_h, spec.in_w, Precision::fp32);
    e.input_c = e.input;
    if (precision != Precision::fp32) {
      e.input_c = plan.alloc(n, spec.in_c, spec.in_h, spec.in_w, precision);
      const Tensor in = e.input, in_c = e.input_c;
      plan.forward("input.cast", [&plan, in, in_c]() {
        kernels::cast_from_f32(in_c.data, in_c.dt, static_cast<const float*>(in.data), in.count(), plan.stream());
      });
    }
    BuiltNetwork built = net->build(plan, e.input_c);
    e.loss = &plan.keep<SoftmaxCrossEntropy>(plan, "loss", built.logits, spec.label_smoothing);
    if (train) built.backward(plan, e.loss->backward(plan));
    return plans.emplace(key, std::move(e)).first->second;
  }

  void check_batch(int n) const {
    if (n < 1) throw BadInput("model forward: the batch must hold at least 1 image, got " + std::to_string(n));
  }

  // Runs the forward of `e` whose input and labels are being copied on the stream; returns the loss.
  double run(Entry& e, int n, bool train) {
    // A forgotten position would silently repeat the previous forward's masks.
    if (train && spec.dropout > 0.0f && !position_set)
      throw std::logic_error("model forward: a training forward with dropout needs set_batch_position first");
    if (train) position_set = false;
    if (precision != Precision::fp32) {
      kernels::cast_from_f32(weights.params_c, precision, weights.params, param_count(), ctx.stream());
    }
    last = &e;
    last_train = train;
    last_n = n;
    host_logits.clear();
    e.plan->run_forward();
    int bad_row = -1;
    if (!e.loss->fetch(&bad_row)) {
      int32_t label = 0;
      copy_to_host(&label, e.loss->labels() + bad_row, sizeof label, ctx.stream());
      last = nullptr;
      throw BadInput("model forward: label " + std::to_string(label) + " of image " + std::to_string(bad_row) +
                     " is outside [0, " + std::to_string(spec.classes) + ")");
    }
    return e.loss->loss();
  }
};

GpuModel::GpuModel(const models::ModelSpec& spec, uint64_t seed) {
  gpu::validate(spec);
  require_device("gpu model");
  impl_ = std::make_unique<Impl>(spec, seed);
}

GpuModel::~GpuModel() = default;
GpuModel::GpuModel(GpuModel&&) noexcept = default;
GpuModel& GpuModel::operator=(GpuModel&&) noexcept = default;

const models::ModelSpec& GpuModel::spec() const { return impl_->spec; }
Precision GpuModel::precision() const { return impl_->precision; }
int GpuModel::device() const { return impl_->ctx.device(); }
cudaStream_t GpuModel::stream() const { return impl_->ctx.stream(); }

std::span<float> GpuModel::params() { return {impl_->params.as<float>(), impl_->param_count()}; }
std::span<float> GpuModel::grads() { return {impl_->grads.as<float>(), impl_->param_count()}; }
std::span<float> GpuModel::buffers() { return {impl_->buffers.as<float>(), impl_->buffer_count()}; }
const std::vector<models::ParamInfo>& GpuModel::param_table() const { return impl_->desc.params; }
const std::vector<models::ParamInfo>& GpuModel::buffer_table() const { return impl_->desc.buffers; }

namespace {
void require_size(size_t got, size_t want, const char* what) {
  if (got != want) {
    throw std::invalid_argument(std::string("GpuModel: ") + what + " needs " + std::to_string(want) +
                                " floats, got " + std::to_string(got));
  }
}
}  // namespace

void GpuModel::set_batch_position(const models::BatchPosition& at) {
  impl_->position = at;
  impl_->position_set = true;
}

void GpuModel::upload_params(std::span<const float> host) {
  require_size(host.size(), impl_->param_count(), "upload_params");
  copy_to_device(impl_->params.get(), host.data(), host.size_bytes(), stream());
}

void GpuModel::download_params(std::span<float> host) const {
  require_size(host.size(), impl_->param_count(), "download_params");
  copy_to_host(host.data(), impl_->params.get(), host.size_bytes(), stream());
}

void GpuModel::upload_buffers(std::span<const float> host) {
  require_size(host.size(), impl_->buffer_count(), "upload_buffers");
  if (host.empty()) return;
  copy_to_device(impl_->buffers.get(), host.data(), host.size_bytes(), stream());
}

void GpuModel::download_buffers(std::span<float> host) const {
  require_size(host.size(), impl_->buffer_count(), "download_buffers");
  if (host.empty()) return;
  copy_to_host(host.data(), impl_->buffers.get(), host.size_bytes(), stream());
}

void GpuModel::download_grads(std::span<float> host) const {
  require_size(host.size(), impl_->param_count(), "download_grads");
  copy_to_host(host.data(), impl_->grads.get(), host.size_bytes(), stream());
}

double GpuModel::forward(const float* x, const int32_t* labels, int n, bool train) {
  Impl& m = *impl_;
  m.check_batch(n);
  if (x == nullptr || labels == nullptr) throw BadInput("model forward: no input or no labels given");
  for (int i = 0; i < n; ++i) {
    if (labels[i] < 0 || labels[i] >= m.spec.classes) {
      throw BadInput("model forward: label " + std::to_string(labels[i]) + " of image " + std::to_string(i) +
                     " is outside [0, " + std::to_string(m.spec.classes) + ")");
    }
  }
  Impl::Entry& e = m.plan_for(n, train);
  const size_t xbytes = size_t(n) * m.image_floats() * sizeof(float), ybytes = size_t(n) * sizeof(int32_t);
  // The staging buffers' previous copies finished: every forward ends by waiting for the stream.
  if (m.staging_x.bytes() < xbytes) m.staging_x = PinnedBuffer(xbytes);
  if (m.staging_y.bytes() < ybytes) m.staging_y = PinnedBuffer(ybytes);
  std::memcpy(m.staging_x.get(), x, xbytes);
  std::memcpy(m.staging_y.get(), labels, ybytes);
  DTB_CUDA(cudaMemcpyAsync(e.input.data, m.staging_x.get(), xbytes, cudaMemcpyHostToDevice, stream()));
  DTB_CUDA(cudaMemcpyAsync(e.loss->labels(), m.staging_y.get(), ybytes, cudaMemcpyHostToDevice, stream()));
  return m.run(e, n, train);
}

double GpuModel::forward_device(const float* x, const int32_t* labels, int n, bool train) {
  Impl& m = *impl_;
  m.check_batch(n);
  if (x == nullptr || labels == nullptr) throw BadInput("model forward: no input or no labels given");
  Impl::Entry& e = m.plan_for(n, train);
  DTB_CUDA(cudaMemcpyAsync(e.input.data, x, size_t(n) * m.image_floats() * sizeof(float), cudaMemcpyDeviceToDevice,
                           stream()));
  DTB_CUDA(cudaMemcpyAsync(e.loss->labels(), labels, size_t(n) * sizeof(int32_t), cudaMemcpyDeviceToDevice, stream()));
  return m.run(e, n, train);
}

const float* GpuModel::logits() {
  Impl& m = *impl_;
  if (m.last == nullptr) throw std::logic_error("gpu model: logits() before any forward");
  if (m.host_logits.empty()) {
    const Tensor& z = m.last->loss->logits();
    m.host_logits.resize(z.count());
    copy_to_host(m.host_logits.data(), z.data, z.bytes(), stream());
  }
  return m.host_logits.data();
}

int GpuModel::correct() const { return impl_->last == nullptr ? 0 : impl_->last->loss->correct(); }
int GpuModel::last_batch() const { return impl_->last_n; }

void GpuModel::backward(const OnReady& on_ready) {
  Impl& m = *impl_;
  if (m.last == nullptr || !m.last_train) throw std::logic_error("gpu model: backward() needs a training forward first");
  m.last->loss->set_loss_scale(m.loss_scale);
  m.last->plan->set_grad_unscale(1.0f / m.loss_scale);
  m.last->plan->run_backward(on_ready);
}

void GpuModel::set_loss_scale(float scale) {
  if (!(scale > 0.0f) || !std::isfinite(scale)) {
    throw std::invalid_argument("GpuModel::set_loss_scale: the scale must be finite and > 0, got " +
                                std::to_string(scale));
  }
  impl_->loss_scale = scale;
}

float GpuModel::loss_scale() const { return impl_->loss_scale; }

bool GpuModel::grads_finite() {
  Impl& m = *impl_;
  auto* flag = reinterpret_cast<unsigned int*>(m.scratch.as<char>() + (kernels::kSumBlocks + 1) * sizeof(double));
  DTB_CUDA(cudaMemsetAsync(flag, 0, sizeof(unsigned int), stream()));
  kernels::flag_nonfinite(m.grads.as<float>(), m.param_count(), flag, stream());
  auto* host_flag = reinterpret_cast<unsigned int*>(m.host_scratch.as<char>() + sizeof(double));
  DTB_CUDA(cudaMemcpyAsync(host_flag, flag, sizeof(unsigned int), cudaMemcpyDeviceToHost, stream()));
  DTB_CUDA(cudaStreamSynchronize(stream()));
  return *host_flag == 0;
}


double GpuModel::grads_norm_sq() {
  Impl& m = *impl_;
  double* partial = m.scratch.as<double>();
  double* out = partial + kernels::kSumBlocks;
  kernels::sum_squares(m.grads.as<float>(), m.param_count(), partial, out, stream());
  DTB_CUDA(cudaMemcpyAsync(m.host_scratch.get(), out, sizeof(double), cudaMemcpyDeviceToHost, stream()));
  DTB_CUDA(cudaStreamSynchronize(stream()));
  return *m.host_scratch.as<double>();
}

void GpuModel::range_norm_sq(size_t slot, size_t offset, size_t n) {
  Impl& m = *impl_;
  const size_t slots = m.desc.params.size();
  if (slot >= slots || offset > m.param_count() || n > m.param_count() - offset)
    throw std::logic_error("GpuModel::range_norm_sq: slot or range out of bounds");
  if (m.norm_slots.bytes() == 0) m.norm_slots = DeviceBuffer(slots * sizeof(double));
  kernels::sum_squares(m.grads.as<float>() + offset, n, m.scratch.as<double>(), m.norm_slots.as<double>() + slot,
                       stream());
}

double GpuModel::slots_sum(size_t slots) {
  Impl& m = *impl_;
  if (slots == 0) return 0.0;
  if (m.norm_slots.bytes() < slots * sizeof(double)) throw std::logic_error("GpuModel::slots_sum: slots not taken");
  std::vector<double> host(slots);
  DTB_CUDA(cudaStreamSynchronize(stream()));
  DTB_CUDA(cudaMemcpy(host.data(), m.norm_slots.get(), slots * sizeof(double), cudaMemcpyDeviceToHost));
  double total = 0.0;
  for (double v : host) total += v;
  return total;
}

void GpuModel::synchronize() const { DTB_CUDA(cudaStreamSynchronize(stream())); }

double GpuModel::macs_per_sample() const { return impl_->desc.macs_per_sample; }
double GpuModel::flops_per_sample_train() const { return impl_->desc.flops_per_sample_train(); }

}  // namespace dtbench::gpu
