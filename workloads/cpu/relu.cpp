#include "workloads/cpu/relu.hpp"

namespace dtbench::cpu {

using dnnl::memory;

Relu::Relu(Plan& plan, std::string name, const memory& x) : name_(std::move(name)) {
  const auto prop = plan.training() ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  dnnl::eltwise_forward::desc d(prop, dnnl::algorithm::eltwise_relu_use_dst_for_bwd, x.get_desc(), 0.0f, 0.0f);
  fwd_pd_ = dnnl::eltwise_forward::primitive_desc(d, plan.engine());
  y_ = plan.alloc(fwd_pd_.dst_desc());
  plan.forward(name_, dnnl::eltwise_forward(fwd_pd_), {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y_}});
}

memory Relu::backward(Plan& plan, const memory& dy) {
  const memory::desc md = y_.get_desc();
  dnnl::eltwise_backward::desc d(dnnl::algorithm::eltwise_relu_use_dst_for_bwd, md, md, 0.0f, 0.0f);
  dnnl::eltwise_backward::primitive_desc pd(d, plan.engine(), fwd_pd_);
  memory dy2 = plan.backward_as(dy, pd.diff_dst_desc(), name_ + ".diff_dst");
  memory dx = plan.alloc(pd.diff_src_desc());
  plan.backward(name_ + ".bwd", dnnl::eltwise_backward(pd),
                {{DNNL_ARG_DST, y_}, {DNNL_ARG_DIFF_DST, dy2}, {DNNL_ARG_DIFF_SRC, dx}});
  return dx;
}

}  // namespace dtbench::cpu
