#include "optim/gpu/fused_optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/cuda/cuda_check.hpp"
#include "optim/clip.hpp"
#include "optim/gpu/adam.hpp"
#include "optim/gpu/lamb.hpp"
#include "optim/gpu/lars.hpp"
#include "optim/gpu/sgd.hpp"
#include "optim/options.hpp"
#include "optim/registry.hpp"
#include "optim/state_io.hpp"

namespace dtbench::gpu {

namespace {

// A device copy of v, on `stream` (the optimizer's, which its kernels run on; see copy_to_device).
template <class T>
DeviceBuffer upload(const std::vector<T>& v, cudaStream_t stream) {
  DeviceBuffer b(std::max<size_t>(v.size(), 1) * sizeof(T));
  copy_to_device(b.get(), v.data(), v.size() * sizeof(T), stream);
  return b;
}

}  // namespace

GpuOptimizer::GpuOptimizer(std::string name, optim::ParamTable table, optim::CommonOptions common,
                           cudaStream_t stream)
    : name_(std::move(name)), table_(std::move(table)), common_(common), stream_(stream) {
  optim::check_common(common_);
  require_device("gpu optimizer " + name_);
  decay_ = optim::weight_decay_table(table_, common_);
  // The chunks as device arrays: their flat ranges and tensors, and each tensor's first chunk and count.
  std::vector<uint64_t> begin, end;
  std::vector<int32_t> tensor, first(table_.num_tensors(), 0), count(table_.num_tensors(), 0);
  for (const optim::Chunk& c : optim::split_into_chunks(table_, kChunkElements)) {
    if (count[c.tensor]++ == 0) first[c.tensor] = static_cast<int32_t>(begin.size());
    begin.push_back(c.begin);
    end.push_back(c.end);
    tensor.push_back(static_cast<int32_t>(c.tensor));
  }
  std::vector<uint8_t> bn_or_bias;
  for (const optim::TensorInfo& t : table_.tensors()) bn_or_bias.push_back(optim::is_bn_or_bias(t.kind) ? 1 : 0);
  if (begin.size() > size_t(std::numeric_limits<int32_t>::max())) {
    throw std::invalid_argument("GpuOptimizer: too many chunks for one buffer");
  }
  chunk_begin_ = upload(begin, stream_);
  chunk_end_ = upload(end, stream_);
  chunk_tensor_ = upload(tensor, stream_);
  tensor_first_ = upload(first, stream_);
  tensor_count_ = upload(count, stream_);
  decay_dev_ = upload(decay_, stream_);
  bn_or_bias_dev_ = upload(bn_or_bias, stream_);
  none_dev_ = DeviceBuffer(std::max<size_t>(table_.num_tensors(), 1));  // zero-filled
  const size_t nc = std::max<size_t>(begin.size(), 1), nt = std::max<size_t>(table_.num_tensors(), 1);
  scratch_ = DeviceBuffer((2 * nc + 2 * nt) * sizeof(double));
  host_sums_ = PinnedBuffer(nt * sizeof(double));

  chunks_.begin = chunk_begin_.as<const uint64_t>();
  chunks_.end = chunk_end_.as<const uint64_t>();
  chunks_.tensor = chunk_tensor_.as<const int32_t>();
  chunks_.first = tensor_first_.as<const int32_t>();
  chunks_.count = tensor_count_.as<const int32_t>();
  chunks_.num_chunks = static_cast<int>(begin.size());
  chunks_.num_tensors = static_cast<int>(table_.num_tensors());
  double* s = scratch_.as<double>();
  sums_.chunk_a = s;
  sums_.chunk_b = s + nc;
  sums_.tensor_a = s + 2 * nc;
  sums_.tensor_b = s + 2 * nc + nt;
}

GpuOptimizer::~GpuOptimizer() = default;

DeviceBuffer GpuOptimizer::state_buffer() const {
  return DeviceBuffer(std::max<size_t>(table_.buffer_size(), 1) * sizeof(float));
}

DeviceBuffer GpuOptimizer::per_tensor_ones() const {
  return upload(std::vector<double>(std::max<size_t>(table_.num_tensors(), 1), 1.0), stream_);
}

std::vector<double> GpuOptimizer::per_tensor_to_host(const double* device) const {
  std::vector<double> out(table_.num_tensors());
  copy_to_host(out.data(), device, out.size() * sizeof(double), stream_);
  return out;
}

void GpuOptimizer::step(std::span<float> params, std::span<const float> grads, double lr) {
  optim::check_step_buffers(table_, params.size(), grads.size(), "GpuOptimizer::step");
  optim::check_learning_rate(lr, "GpuOptimizer::step");
  // The raw gradient's per-tensor sums of squares: non-finite exactly when some element is (squares of
  // finite floats cannot overflow a double), and the global norm for clipping.
  const size_t nt = table_.num_tensors();
  optim_kernels::grad_sumsq(grads.data(), chunks_, sums_, stream_);
  if (nt > 0) {
    DTB_CUDA(cudaMemcpyAsync(host_sums_.get(), sums_.tensor_a, nt * sizeof(double), cudaMemcpyDeviceToHost, stream_));
  }
  DTB_CUDA(cudaStreamSynchronize(stream_));
  const double* sumsq = host_sums_.as<const double>();
  double total = 0.0;
  for (size_t k = 0; k < nt; ++k) {
    if (!std::isfinite(sumsq[k])) {
      // Found on the device; the report reads the gradient tensor by tensor on the host, as the CPU's does.
      std::vector<float> host;
      optim::report_non_finite(table_, t_ + 1, [&](const optim::TensorInfo& t) {
        host.resize(t.size);
        copy_to_host(host.data(), grads.data() + t.offset, t.size * sizeof(float), stream_);
        return std::span<const float>(host);
      });
    }
    total += sumsq[k];
  }
  const optim::GradTransform t =
      optim::make_grad_transform(common_.clip_grad_norm, common_.clip_grad_value, std::sqrt(total));
  StepContext ctx;
  ctx.lr = lr;
  ctx.t = t_ + 1;
  ctx.clip.scale = t.scale;
  ctx.clip.limit = t.limit;
  update(params.data(), grads.data(), ctx);
  ++t_;
}

std::vector<uint8_t> GpuOptimizer::save_state() const {
  optim::StateWriter out;
  optim::put_state_header(out, name_, table_.fingerprint(), t_);
  for (const StateArray& a : state_arrays()) {
    std::vector<float> host(a.count);
    copy_to_host(host.data(), a.data, a.count * sizeof(float), stream_);
    out.put_floats(host);
  }
  return out.take();
}

void GpuOptimizer::load_state(std::span<const uint8_t> bytes) {
  optim::StateReader in(bytes);
  const int64_t t = optim::get_state_header(in, name_, table_.fingerprint());
  // Everything is read and checked on the host before any device array changes.
  const std::vector<StateArray> arrays = state_arrays();
  std::vector<std::vector<float>> host(arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    host[i].resize(arrays[i].count);
    in.get_floats(host[i], arrays[i].what);
  }
  in.expect_end();
  for (size_t i = 0; i < arrays.size(); ++i) {
    copy_to_device(arrays[i].data, host[i].data(), arrays[i].count * sizeof(float), stream_);
  }
  t_ = t;
}

std::unique_ptr<GpuOptimizer> make_gpu_optimizer(const Json& section, optim::ParamTable table, cudaStream_t stream) {
  if (!section.is_object()) throw BadInput("/optimizer: must be an object");
  if (!section.contains("name") || !section["name"].is_string()) throw BadInput("/optimizer/name: missing");
  const std::string name = section["name"].get<std::string>();
  const optim::OptimizerEntry* entry = optim::find_optimizer(name);
  if (!entry || entry->gpu == optim::FusedKernel::none) {
    std::string known;
    for (const auto& n : optim::gpu_optimizer_names()) known += (known.empty() ? "" : ", ") + n;
    throw BadInput("/optimizer/name: '" + name + "' has no fused GPU kernels (the gpu backend has " + known + ")");
  }
  // Every option is read and checked before the device is touched.
  const optim::CommonOptions common = optim::read_common_options(section);
  optim::check_common(common);
  switch (entry->gpu) {
    case optim::FusedKernel::sgd: {
      const optim::SgdOptions o = optim::read_sgd_options(section);
      optim::check_options(o);
      return std::make_unique<GpuSgd>(std::move(table), common, o, stream);
    }
    case optim::FusedKernel::adam: {
      const optim::AdamOptions o = optim::read_adam_options(section, name);
      optim::check_options(o);
      return std::make_unique<GpuAdam>(std::move(table), common, o, stream);
    }
    case optim::FusedKernel::lars: {
      const optim::LarsOptions o = optim::read_lars_options(section);
      optim::check_options(o);
      return std::make_unique<GpuLars>(std::move(table), common, o, stream);
    }
    case optim::FusedKernel::lamb: {
      const optim::LambOptions o = optim::read_lamb_options(section);
      optim::check_options(o);
      return std::make_unique<GpuLamb>(std::move(table), common, o, stream);
    }
    case optim::FusedKernel::none:
      break;
  }
  throw std::logic_error("make_gpu_optimizer: no kernel family for '" + name + "'");
}

}  // namespace dtbench::gpu
