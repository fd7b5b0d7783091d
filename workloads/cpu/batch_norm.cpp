#include "workloads/cpu/batch_norm.hpp"

#include "core/error.hpp"
#include "workloads/cpu/sync_batch_norm.hpp"

namespace dtbench::cpu {

using dnnl::memory;
using flags = dnnl::normalization_flags;

BatchNorm::BatchNorm(Plan& plan, std::string name, const BatchNormShape& s, size_t gamma_offset,
                     size_t beta_offset, size_t running_offset, const memory& x)
    : name_(std::move(name)),
      shape_(s),
      gamma_offset_(gamma_offset),
      beta_offset_(beta_offset),
      running_offset_(running_offset) {
  if (plan.training() && plan.context().cross_replica_sum) {
    sync_ = std::make_shared<SyncBatchNorm>(plan, name_, s, gamma_offset, beta_offset, running_offset, x);
    return;
  }
  const memory::dims xd = x.get_desc().dims();
  const int64_t per_channel = xd[0] * xd[2] * xd[3];
  if (plan.training() && per_channel < 2) {
    throw BadInput(name_ + ": batch norm in training needs more than one value per channel, got batch " +
                   std::to_string(xd[0]) + " x " + std::to_string(xd[2]) + " x " + std::to_string(xd[3]));
  }
  flags_ = flags::use_scale | flags::use_shift;
  if (s.fuse_relu) flags_ = flags_ | flags::fuse_norm_relu;
  // The data must be in the compute type; any layout will do, so keep the producer's.
  memory::desc data_md = x.get_desc();
  if (data_md.data_type() != plan.compute_type()) {
    data_md = memory::desc(xd, plan.compute_type(), plain_tag(xd.size()));
  }
  x_ = plan.forward_as(x, data_md, name_ + ".src");
  const memory::desc cmd = plain_md({s.channels});
  memory gamma = plan.param_view(gamma_offset_, cmd), beta = plan.param_view(beta_offset_, cmd);

  if (plan.training()) {
    dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_training, data_md, s.eps, flags_);
    fwd_pd_ = dnnl::batch_normalization_forward::primitive_desc(d, plan.engine());
    mean_ = plan.alloc(fwd_pd_.mean_desc());
    var_ = plan.alloc(fwd_pd_.variance_desc());
    y_ = plan.alloc(fwd_pd_.dst_desc());
    Args args{{DNNL_ARG_SRC, x_},     {DNNL_ARG_DST, y_},     {DNNL_ARG_MEAN, mean_},
              {DNNL_ARG_VARIANCE, var_}, {DNNL_ARG_SCALE, gamma}, {DNNL_ARG_SHIFT, beta}};
    if (s.fuse_relu) {
      workspace_ = plan.alloc(fwd_pd_.workspace_desc());
      args[DNNL_ARG_WORKSPACE] = workspace_;
    }
    plan.forward(name_, dnnl::batch_normalization_forward(fwd_pd_), std::move(args));
    // Running averages with PyTorch's convention (unbiased variance).
    float* running = plan.buffers() + running_offset_;
    const float* mean = static_cast<const float*>(mean_.get_data_handle());
    const float* var = static_cast<const float*>(var_.get_data_handle());
    const int channels = s.channels;
    const float m = s.momentum;
    const float unbias = float(double(per_channel) / double(per_channel - 1));
    plan.forward_host(name_ + ".running_stats", [=]() {
      for (int c = 0; c < channels; ++c) {
        running[c] = (1.0f - m) * running[c] + m * mean[c];
        running[channels + c] = (1.0f - m) * running[channels + c] + m * var[c] * unbias;
      }
    });
  } else {
    flags_ = flags_ | flags::use_global_stats;
    dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, data_md, s.eps, flags_);
    fwd_pd_ = dnnl::batch_normalization_forward::primitive_desc(d, plan.engine());
    mean_ = plan.buffer_view(running_offset_, cmd);
    var_ = plan.buffer_view(running_offset_ + size_t(s.channels), cmd);
    y_ = plan.alloc(fwd_pd_.dst_desc());
    plan.forward(name_, dnnl::batch_normalization_forward(fwd_pd_),
                 {{DNNL_ARG_SRC, x_},
                  {DNNL_ARG_DST, y_},
                  {DNNL_ARG_MEAN, mean_},
                  {DNNL_ARG_VARIANCE, var_},
                  {DNNL_ARG_SCALE, gamma},
                  {DNNL_ARG_SHIFT, beta}});
  }
}

const memory& BatchNorm::y() const { return sync_ ? sync_->y() : y_; }

memory BatchNorm::backward(Plan& plan, const memory& dy) {
  if (sync_) return sync_->backward(plan, dy);
  const memory::desc data_md = x_.get_desc();
  dnnl::batch_normalization_backward::desc d(dnnl::prop_kind::backward, data_md, data_md, shape_.eps, flags_);
  dnnl::batch_normalization_backward::primitive_desc pd(d, plan.engine(), fwd_pd_);
  memory dy2 = plan.backward_as(dy, pd.diff_dst_desc(), name_ + ".diff_dst");
  memory dx = plan.alloc(pd.diff_src_desc());
  const memory::desc cmd = plain_md({shape_.channels});
  Args args{{DNNL_ARG_SRC, x_},
            {DNNL_ARG_MEAN, mean_},
            {DNNL_ARG_VARIANCE, var_},
            {DNNL_ARG_DIFF_DST, dy2},
            {DNNL_ARG_SCALE, plan.param_view(gamma_offset_, cmd)},
            {DNNL_ARG_SHIFT, plan.param_view(beta_offset_, cmd)},  // oneDNN 2.6 requires it, though unused
            {DNNL_ARG_DIFF_SRC, dx},
            {DNNL_ARG_DIFF_SCALE, plan.grad_view(gamma_offset_, cmd)},
            {DNNL_ARG_DIFF_SHIFT, plan.grad_view(beta_offset_, cmd)}};
  if (shape_.fuse_relu) args[DNNL_ARG_WORKSPACE] = workspace_;
  plan.backward(name_ + ".bwd", dnnl::batch_normalization_backward(pd), std::move(args));
  plan.announce(beta_offset_, size_t(shape_.channels));
  plan.announce(gamma_offset_, size_t(shape_.channels));
  return dx;
}

}  // namespace dtbench::cpu
