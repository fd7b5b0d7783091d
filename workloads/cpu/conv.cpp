#include "workloads/cpu/conv.hpp"

namespace dtbench::cpu {

using dnnl::memory;
using dt = dnnl::memory::data_type;

Conv::Conv(Plan& plan, std::string name, const ConvShape& s, size_t weight_offset, size_t bias_offset,
           const memory& x)
    : name_(std::move(name)), shape_(s), weight_offset_(weight_offset), bias_offset_(bias_offset) {
  const memory::dims xd = x.get_desc().dims();
  const int64_t n = xd[0], h = xd[2], w = xd[3];
  weight_dims_ = {s.out_c, s.in_c, s.kernel, s.kernel};
  strides_ = {s.stride, s.stride};
  padding_ = {s.pad, s.pad};
  const memory::dims yd = {n, s.out_c, s.out_size(int(h)), s.out_size(int(w))};
  const dt ct = plan.compute_type();

  const auto prop = plan.training() ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  const memory::desc src = any_md(xd, ct), wei = any_md(weight_dims_, ct), dst = any_md(yd, ct);
  if (s.bias) {
    dnnl::convolution_forward::desc d(prop, dnnl::algorithm::convolution_direct, src, wei,
                                      plain_md({s.out_c}), dst, strides_, padding_, padding_);
    fwd_pd_ = dnnl::convolution_forward::primitive_desc(d, plan.engine());
  } else {
    dnnl::convolution_forward::desc d(prop, dnnl::algorithm::convolution_direct, src, wei, dst, strides_,
                                      padding_, padding_);
    fwd_pd_ = dnnl::convolution_forward::primitive_desc(d, plan.engine());
  }

  x_ = plan.forward_as(x, fwd_pd_.src_desc(), name_ + ".src");
  // Canonical fp32 OIHW weights -> the primitive's layout (and data type), every step.
  w_ = plan.forward_as(plan.param_view(weight_offset_, plain_md(weight_dims_)), fwd_pd_.weights_desc(),
                       name_ + ".weight");
  y_ = plan.alloc(fwd_pd_.dst_desc());
  Args args{{DNNL_ARG_SRC, x_}, {DNNL_ARG_WEIGHTS, w_}, {DNNL_ARG_DST, y_}};
  if (s.bias) args[DNNL_ARG_BIAS] = plan.param_view(bias_offset_, plain_md({s.out_c}));
  plan.forward(name_, dnnl::convolution_forward(fwd_pd_), std::move(args));
}

memory Conv::backward(Plan& plan, const memory& dy, bool need_dx) {
  const dt ct = plan.compute_type();
  const memory::dims xd = x_.get_desc().dims(), yd = y_.get_desc().dims();
  plan.observe_layer(name_, x_, dy, weight_offset_, shape_.kernel, shape_.stride, shape_.pad);

  // Weight gradient first: it is what a trainer waits for to start reducing.
  memory::desc diff_w_md = any_md(weight_dims_, dt::f32);
  dnnl::convolution_backward_weights::primitive_desc bw_pd;
  if (shape_.bias) {
    dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, any_md(xd, ct), diff_w_md,
                                               plain_md({shape_.out_c}), any_md(yd, ct), strides_, padding_,
                                               padding_);
    bw_pd = dnnl::convolution_backward_weights::primitive_desc(d, plan.engine(), fwd_pd_);
  } else {
    dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, any_md(xd, ct), diff_w_md,
                                               any_md(yd, ct), strides_, padding_, padding_);
    bw_pd = dnnl::convolution_backward_weights::primitive_desc(d, plan.engine(), fwd_pd_);
  }
  memory src = plan.backward_as(x_, bw_pd.src_desc(), name_ + ".bwd_weights.src");
  memory dy_w = plan.backward_as(dy, bw_pd.diff_dst_desc(), name_ + ".bwd_weights.diff_dst");
  memory grad_w = plan.grad_view(weight_offset_, plain_md(weight_dims_));
  const bool direct = bw_pd.diff_weights_desc() == grad_w.get_desc();
  memory dw = direct ? grad_w : plan.alloc(bw_pd.diff_weights_desc());
  Args args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, dy_w}, {DNNL_ARG_DIFF_WEIGHTS, dw}};
  if (shape_.bias) args[DNNL_ARG_DIFF_BIAS] = plan.grad_view(bias_offset_, plain_md({shape_.out_c}));
  plan.backward(name_ + ".bwd_weights", dnnl::convolution_backward_weights(bw_pd), std::move(args));
  if (!direct) {
    plan.backward(name_ + ".diff_weights.reorder", dnnl::reorder(dw, grad_w),
                  {{DNNL_ARG_FROM, dw}, {DNNL_ARG_TO, grad_w}});
  }
  if (shape_.bias) plan.announce(bias_offset_, size_t(shape_.out_c));
  plan.announce(weight_offset_, shape_.weight_size());

  if (!need_dx) return memory();
  dnnl::convolution_backward_data::desc dd(dnnl::algorithm::convolution_direct, any_md(xd, ct),
                                           any_md(weight_dims_, ct), any_md(yd, ct), strides_, padding_, padding_);
  dnnl::convolution_backward_data::primitive_desc bd_pd(dd, plan.engine(), fwd_pd_);
  memory dy_d = plan.backward_reuse(dy_w, dy, bd_pd.diff_dst_desc(), name_ + ".bwd_data.diff_dst");
  memory wd = plan.backward_reuse(w_, plan.param_view(weight_offset_, plain_md(weight_dims_)), bd_pd.weights_desc(),
                                  name_ + ".bwd_data.weight");
  memory dx = plan.alloc(bd_pd.diff_src_desc());
  plan.backward(name_ + ".bwd_data", dnnl::convolution_backward_data(bd_pd),
                {{DNNL_ARG_DIFF_DST, dy_d}, {DNNL_ARG_WEIGHTS, wd}, {DNNL_ARG_DIFF_SRC, dx}});
  return dx;
}

}  // namespace dtbench::cpu
