#include "workloads/cpu/linear.hpp"

namespace dtbench::cpu {

using dnnl::memory;
using dt = dnnl::memory::data_type;

size_t Linear::in_features(const memory::dims& xd) {
  size_t n = 1;
  for (size_t i = 1; i < xd.size(); ++i) n *= size_t(xd[i]);
  return n;
}

Linear::Linear(Plan& plan, std::string name, int out_features, size_t weight_offset, size_t bias_offset,
               const memory& x, bool plain_f32_output)
    : name_(std::move(name)), out_(out_features), weight_offset_(weight_offset), bias_offset_(bias_offset) {
  const dt ct = plan.compute_type();
  const memory::dims xd = x.get_desc().dims();
  weight_dims_ = xd;
  weight_dims_[0] = out_features;
  const memory::dims yd = {xd[0], out_features};
  memory::desc src_md = x.get_desc();
  if (src_md.data_type() != ct) src_md = plain_md(xd, ct);
  const memory::desc dst_md = plain_f32_output ? plain_md(yd, dt::f32) : any_md(yd, ct);
  const auto prop = plan.training() ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  dnnl::inner_product_forward::desc d(prop, src_md, any_md(weight_dims_, ct), plain_md({out_features}), dst_md);
  fwd_pd_ = dnnl::inner_product_forward::primitive_desc(d, plan.engine());
  x_ = plan.forward_as(x, fwd_pd_.src_desc(), name_ + ".src");
  w_ = plan.forward_as(plan.param_view(weight_offset_, plain_md(weight_dims_)), fwd_pd_.weights_desc(),
                       name_ + ".weight");
  y_ = plan.alloc(fwd_pd_.dst_desc());
  plan.forward(name_, dnnl::inner_product_forward(fwd_pd_),
               {{DNNL_ARG_SRC, x_},
                {DNNL_ARG_WEIGHTS, w_},
                {DNNL_ARG_BIAS, plan.param_view(bias_offset_, plain_md({out_features}))},
                {DNNL_ARG_DST, y_}});
}

memory Linear::backward(Plan& plan, const memory& dy, bool need_dx) {
  const dt ct = plan.compute_type();
  const memory::dims yd = y_.get_desc().dims();
  plan.observe_layer(name_, x_, dy, weight_offset_, 0, 1, 0);
  dnnl::inner_product_backward_weights::desc bwd(x_.get_desc(), any_md(weight_dims_, dt::f32),
                                                 plain_md({out_}), any_md(yd, ct));
  dnnl::inner_product_backward_weights::primitive_desc bw_pd(bwd, plan.engine(), fwd_pd_);
  memory src = plan.backward_as(x_, bw_pd.src_desc(), name_ + ".bwd_weights.src");
  memory dy_w = plan.backward_as(dy, bw_pd.diff_dst_desc(), name_ + ".bwd_weights.diff_dst");
  memory grad_w = plan.grad_view(weight_offset_, plain_md(weight_dims_));
  const bool direct = bw_pd.diff_weights_desc() == grad_w.get_desc();
  memory dw = direct ? grad_w : plan.alloc(bw_pd.diff_weights_desc());
  plan.backward(name_ + ".bwd_weights", dnnl::inner_product_backward_weights(bw_pd),
                {{DNNL_ARG_SRC, src},
                 {DNNL_ARG_DIFF_DST, dy_w},
                 {DNNL_ARG_DIFF_WEIGHTS, dw},
                 {DNNL_ARG_DIFF_BIAS, plan.grad_view(bias_offset_, plain_md({out_}))}});
  if (!direct) {
    plan.backward(name_ + ".diff_weights.reorder", dnnl::reorder(dw, grad_w),
                  {{DNNL_ARG_FROM, dw}, {DNNL_ARG_TO, grad_w}});
  }
  plan.announce(bias_offset_, size_t(out_));
  plan.announce(weight_offset_, num_elements(grad_w.get_desc()));
  if (!need_dx) return memory();

  dnnl::inner_product_backward_data::desc bdd(x_.get_desc(), any_md(weight_dims_, ct), any_md(yd, ct));
  dnnl::inner_product_backward_data::primitive_desc bd_pd(bdd, plan.engine(), fwd_pd_);
  memory dy_d = plan.backward_reuse(dy_w, dy, bd_pd.diff_dst_desc(), name_ + ".bwd_data.diff_dst");
  memory wd = plan.backward_reuse(w_, plan.param_view(weight_offset_, plain_md(weight_dims_)), bd_pd.weights_desc(),
                                  name_ + ".bwd_data.weight");
  memory dx = plan.alloc(bd_pd.diff_src_desc());
  plan.backward(name_ + ".bwd_data", dnnl::inner_product_backward_data(bd_pd),
                {{DNNL_ARG_DIFF_DST, dy_d}, {DNNL_ARG_WEIGHTS, wd}, {DNNL_ARG_DIFF_SRC, dx}});
  return dx;
}

}  // namespace dtbench::cpu
