#include "workloads/cpu/residual_add.hpp"

namespace dtbench::cpu {

using dnnl::memory;

ResidualAdd::ResidualAdd(Plan& plan, std::string name, const memory& a, const memory& b, bool relu,
                         bool in_place)
    : name_(std::move(name)), relu_(relu) {
  const memory::desc md = a.get_desc();
  memory b2 = plan.forward_as(b, md, name_ + ".src1");
  dnnl::binary::desc d(dnnl::algorithm::binary_add, md, md, md);
  dnnl::primitive_attr attr;
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  dnnl::binary::primitive_desc pd(d, attr, plan.engine());
  y_ = in_place ? a : plan.alloc(md);
  plan.forward(name_, dnnl::binary(pd), {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b2}, {DNNL_ARG_DST, y_}});
}

memory ResidualAdd::backward(Plan& plan, const memory& dy) {
  if (!relu_) return dy;
  const memory::desc md = y_.get_desc();
  dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, dnnl::algorithm::eltwise_relu_use_dst_for_bwd,
                                 md, 0.0f, 0.0f);
  dnnl::eltwise_forward::primitive_desc fpd(fd, plan.engine());
  dnnl::eltwise_backward::desc d(dnnl::algorithm::eltwise_relu_use_dst_for_bwd, md, md, 0.0f, 0.0f);
  dnnl::eltwise_backward::primitive_desc pd(d, plan.engine(), fpd);
  memory dy2 = plan.backward_as(dy, pd.diff_dst_desc(), name_ + ".diff_dst");
  memory ds = plan.alloc(pd.diff_src_desc());
  plan.backward(name_ + ".relu_bwd", dnnl::eltwise_backward(pd),
                {{DNNL_ARG_DST, y_}, {DNNL_ARG_DIFF_DST, dy2}, {DNNL_ARG_DIFF_SRC, ds}});
  return ds;
}

void accumulate_backward(Plan& plan, const std::string& name, const memory& into, const memory& other) {
  const memory::desc md = into.get_desc();
  memory other2 = plan.backward_as(other, md, name + ".src1");
  dnnl::binary::desc d(dnnl::algorithm::binary_add, md, md, md);
  dnnl::binary::primitive_desc pd(d, plan.engine());
  plan.backward(name, dnnl::binary(pd), {{DNNL_ARG_SRC_0, into}, {DNNL_ARG_SRC_1, other2}, {DNNL_ARG_DST, into}});
}

}  // namespace dtbench::cpu
