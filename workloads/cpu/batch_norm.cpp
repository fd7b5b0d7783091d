#include "workloads/cpu/batch_norm.hpp"

#include <stdexcept>

#include "core/error.hpp"
#include "workloads/cpu/sync_batch_norm.hpp"

namespace dtbench::cpu {

using dnnl::memory;
using flags = dnnl::normalization_flags;

namespace {

// Ghost batch `i` of `whole` (samples outermost, so a contiguous slice) as a memory described by `part`.
memory slice(const memory& whole, const memory::desc& part, int64_t i) {
  char* base = static_cast<char*>(whole.get_data_handle());
  return memory(part, whole.get_engine(), base + size_t(i) * part.get_size());
}

}  // namespace

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
  const int64_t n = xd[0];
  // Ghost batches only in training (evaluation uses the running statistics) and only when smaller than
  // the batch; a batch that is not a whole number of them is refused (config rule /model/ghost_batch).
  const int64_t ghost = plan.training() && s.ghost_batch > 0 && s.ghost_batch < n ? s.ghost_batch : n;
  if (n % ghost != 0) {
    throw BadInput(name_ + ": a ghost batch of " + std::to_string(ghost) + " does not divide the batch " +
                   std::to_string(n));
  }
  const int64_t ghosts = n / ghost;
  const int64_t per_channel = ghost * xd[2] * xd[3];
  if (plan.training() && per_channel < 2) {
    throw BadInput(name_ + ": batch norm in training needs more than one value per channel, got " +
                   (ghosts > 1 ? "ghost batch " : "batch ") + std::to_string(ghost) + " x " + std::to_string(xd[2]) +
                   " x " + std::to_string(xd[3]));
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
    part_md_ = ghosts == 1 ? data_md : data_md.submemory_desc({ghost, xd[1], xd[2], xd[3]}, {0, 0, 0, 0});
    dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_training, part_md_, s.eps, flags_);
    fwd_pd_ = dnnl::batch_normalization_forward::primitive_desc(d, plan.engine());
    // Batch norm writes its output in its input's layout, so y_ and dx take x_'s and slice the same way.
    if (fwd_pd_.dst_desc() != part_md_ || part_md_.get_size() * size_t(ghosts) != data_md.get_size())
      throw std::logic_error(name_ + ": ghost batches are not contiguous slices of this layout");
    y_ = plan.alloc(data_md);
    const dnnl::batch_normalization_forward prim(fwd_pd_);
    std::vector<const float*> means, vars;
    for (int64_t i = 0; i < ghosts; ++i) {
      xs_.push_back(slice(x_, part_md_, i));
      means_.push_back(plan.alloc(fwd_pd_.mean_desc()));
      vars_.push_back(plan.alloc(fwd_pd_.variance_desc()));
      means.push_back(static_cast<const float*>(means_.back().get_data_handle()));
      vars.push_back(static_cast<const float*>(vars_.back().get_data_handle()));
      Args args{{DNNL_ARG_SRC, xs_[i]},     {DNNL_ARG_DST, slice(y_, part_md_, i)}, {DNNL_ARG_MEAN, means_[i]},
                {DNNL_ARG_VARIANCE, vars_[i]}, {DNNL_ARG_SCALE, gamma},             {DNNL_ARG_SHIFT, beta}};
      if (s.fuse_relu) {
        workspaces_.push_back(plan.alloc(fwd_pd_.workspace_desc()));
        args[DNNL_ARG_WORKSPACE] = workspaces_.back();
      }
      plan.forward(name_, prim, std::move(args));
    }
    // Running averages with PyTorch's convention (unbiased variance), one update per ghost batch in order.
    float* running = plan.buffers() + running_offset_;
    const int channels = s.channels;
    const float m = s.momentum;
    const float unbias = float(double(per_channel) / double(per_channel - 1));
    plan.forward_state(name_ + ".running_stats", [=]() {
      for (size_t i = 0; i < means.size(); ++i) {
        for (int c = 0; c < channels; ++c) {
          running[c] = (1.0f - m) * running[c] + m * means[i][c];
          running[channels + c] = (1.0f - m) * running[channels + c] + m * vars[i][c] * unbias;
        }
      }
    });
  } else {
    flags_ = flags_ | flags::use_global_stats;
    dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, data_md, s.eps, flags_);
    fwd_pd_ = dnnl::batch_normalization_forward::primitive_desc(d, plan.engine());
    means_ = {plan.buffer_view(running_offset_, cmd)};
    vars_ = {plan.buffer_view(running_offset_ + size_t(s.channels), cmd)};
    y_ = plan.alloc(fwd_pd_.dst_desc());
    plan.forward(name_, dnnl::batch_normalization_forward(fwd_pd_),
                 {{DNNL_ARG_SRC, x_},
                  {DNNL_ARG_DST, y_},
                  {DNNL_ARG_MEAN, means_[0]},
                  {DNNL_ARG_VARIANCE, vars_[0]},
                  {DNNL_ARG_SCALE, gamma},
                  {DNNL_ARG_SHIFT, beta}});
  }
}

const memory& BatchNorm::y() const { return sync_ ? sync_->y() : y_; }

memory BatchNorm::backward(Plan& plan, const memory& dy) {
  if (sync_) return sync_->backward(plan, dy);
  const size_t ghosts = xs_.size();
  dnnl::batch_normalization_backward::desc d(dnnl::prop_kind::backward, part_md_, part_md_, shape_.eps, flags_);
  dnnl::batch_normalization_backward::primitive_desc pd(d, plan.engine(), fwd_pd_);
  if (pd.diff_dst_desc() != part_md_ || pd.diff_src_desc() != part_md_)
    throw std::logic_error(name_ + ": batch norm's backward wants another layout than its forward");
  memory dy2 = plan.backward_as(dy, x_.get_desc(), name_ + ".diff_dst");
  memory dx = plan.alloc(x_.get_desc());
  const memory::desc cmd = plain_md({shape_.channels});
  const memory gamma = plan.param_view(gamma_offset_, cmd), beta = plan.param_view(beta_offset_, cmd);
  // One ghost batch writes dgamma and dbeta into the gradient buffer; several write their own, summed below.
  std::vector<memory> dgammas, dbetas;
  for (size_t i = 0; i < ghosts; ++i) {
    dgammas.push_back(ghosts == 1 ? plan.grad_view(gamma_offset_, cmd) : plan.alloc(cmd));
    dbetas.push_back(ghosts == 1 ? plan.grad_view(beta_offset_, cmd) : plan.alloc(cmd));
  }
  const dnnl::batch_normalization_backward prim(pd);
  for (size_t i = 0; i < ghosts; ++i) {
    const int64_t g = int64_t(i);
    Args args{{DNNL_ARG_SRC, xs_[i]},
              {DNNL_ARG_MEAN, means_[i]},
              {DNNL_ARG_VARIANCE, vars_[i]},
              {DNNL_ARG_DIFF_DST, slice(dy2, part_md_, g)},
              {DNNL_ARG_SCALE, gamma},
              {DNNL_ARG_SHIFT, beta},  // oneDNN 2.6 requires it, though unused
              {DNNL_ARG_DIFF_SRC, slice(dx, part_md_, g)},
              {DNNL_ARG_DIFF_SCALE, dgammas[i]},
              {DNNL_ARG_DIFF_SHIFT, dbetas[i]}};
    if (shape_.fuse_relu) args[DNNL_ARG_WORKSPACE] = workspaces_[i];
    plan.backward(name_ + ".bwd", prim, std::move(args));
  }
  if (ghosts > 1) {
    // The plan's memories keep their addresses (the backward ops' arguments hold them): take the pointers
    // once, not every step.
    std::vector<const float*> pg, pb;
    for (size_t i = 0; i < ghosts; ++i) {
      pg.push_back(static_cast<const float*>(dgammas[i].get_data_handle()));
      pb.push_back(static_cast<const float*>(dbetas[i].get_data_handle()));
    }
    float* dgamma = plan.grads() + gamma_offset_;
    float* dbeta = plan.grads() + beta_offset_;
    const int channels = shape_.channels;
    plan.backward_host(name_ + ".ghost_sum", [=]() {
      for (int c = 0; c < channels; ++c) {
        float sg = pg[0][c], sb = pb[0][c];
        for (size_t i = 1; i < pg.size(); ++i) sg += pg[i][c], sb += pb[i][c];
        dgamma[c] = sg;
        dbeta[c] = sb;
      }
    });
  }
  plan.announce(beta_offset_, size_t(shape_.channels));
  plan.announce(gamma_offset_, size_t(shape_.channels));
  return dx;
}

}  // namespace dtbench::cpu
