#include "workloads/cpu/global_avg_pool.hpp"

namespace dtbench::cpu {

using dnnl::memory;

GlobalAvgPool::GlobalAvgPool(Plan& plan, std::string name, const memory& x) : name_(std::move(name)), x_(x) {
  const memory::dims xd = x.get_desc().dims();
  kernel_ = {xd[2], xd[3]};
  const memory::dims yd = {xd[0], xd[1], 1, 1};
  const auto prop = plan.training() ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  dnnl::pooling_forward::desc d(prop, dnnl::algorithm::pooling_avg_exclude_padding, x.get_desc(),
                                any_md(yd, x.get_desc().data_type()), {1, 1}, kernel_, {0, 0}, {0, 0});
  fwd_pd_ = dnnl::pooling_forward::primitive_desc(d, plan.engine());
  y_ = plan.alloc(fwd_pd_.dst_desc());
  plan.forward(name_, dnnl::pooling_forward(fwd_pd_), {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}});
}

memory GlobalAvgPool::backward(Plan& plan, const memory& dy) {
  dnnl::pooling_backward::desc d(dnnl::algorithm::pooling_avg_exclude_padding, x_.get_desc(), y_.get_desc(),
                                 {1, 1}, kernel_, {0, 0}, {0, 0});
  dnnl::pooling_backward::primitive_desc pd(d, plan.engine(), fwd_pd_);
  memory dy2 = plan.backward_as(dy, pd.diff_dst_desc(), name_ + ".diff_dst");
  memory dx = plan.alloc(pd.diff_src_desc());
  plan.backward(name_ + ".bwd", dnnl::pooling_backward(pd), {{DNNL_ARG_DIFF_DST, dy2}, {DNNL_ARG_DIFF_SRC, dx}});
  return dx;
}

}  // namespace dtbench::cpu
