#include "workloads/cpu/max_pool.hpp"

namespace dtbench::cpu {

using dnnl::memory;

MaxPool::MaxPool(Plan& plan, std::string name, const PoolShape& s, const memory& x)
    : name_(std::move(name)), shape_(s), x_(x) {
  const memory::dims xd = x.get_desc().dims();
  const memory::dims yd = {xd[0], xd[1], s.out_size(int(xd[2])), s.out_size(int(xd[3]))};
  const auto prop = plan.training() ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  dnnl::pooling_forward::desc d(prop, dnnl::algorithm::pooling_max, x.get_desc(),
                                any_md(yd, x.get_desc().data_type()), {s.stride, s.stride}, {s.kernel, s.kernel},
                                {s.pad, s.pad}, {s.pad, s.pad});
  fwd_pd_ = dnnl::pooling_forward::primitive_desc(d, plan.engine());
  y_ = plan.alloc(fwd_pd_.dst_desc());
  Args args{{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}};
  if (plan.training()) {
    workspace_ = plan.alloc(fwd_pd_.workspace_desc());
    args[DNNL_ARG_WORKSPACE] = workspace_;
  }
  plan.forward(name_, dnnl::pooling_forward(fwd_pd_), std::move(args));
}

memory MaxPool::backward(Plan& plan, const memory& dy) {
  const PoolShape& s = shape_;
  dnnl::pooling_backward::desc d(dnnl::algorithm::pooling_max, x_.get_desc(), y_.get_desc(), {s.stride, s.stride},
                                 {s.kernel, s.kernel}, {s.pad, s.pad}, {s.pad, s.pad});
  dnnl::pooling_backward::primitive_desc pd(d, plan.engine(), fwd_pd_);
  memory dy2 = plan.backward_as(dy, pd.diff_dst_desc(), name_ + ".diff_dst");
  memory dx = plan.alloc(pd.diff_src_desc());
  plan.backward(name_ + ".bwd", dnnl::pooling_backward(pd),
                {{DNNL_ARG_DIFF_DST, dy2}, {DNNL_ARG_WORKSPACE, workspace_}, {DNNL_ARG_DIFF_SRC, dx}});
  return dx;
}

}  // namespace dtbench::cpu
