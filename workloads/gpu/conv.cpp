#include "workloads/gpu/conv.hpp"

#include <vector>

#include "core/error.hpp"
#include "workloads/gpu/lib_check.hpp"

namespace dtbench::gpu {

namespace {

cudnnConvolutionDescriptor_t make_conv_desc(const ConvShape& s) {
  cudnnConvolutionDescriptor_t d = nullptr;
  DTB_CUDNN(cudnnCreateConvolutionDescriptor(&d));
  DTB_CUDNN(cudnnSetConvolution2dDescriptor(d, s.pad, s.pad, s.stride, s.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT));
  return d;
}

// Picks the first heuristic result that ran, is deterministic, fits the workspace cap and (fp32) uses no
// tensor cores; sets the descriptor's math type to what the algorithm needs and reserves its workspace.
template <class Perf>
Perf pick(const std::vector<Perf>& perf, int count, Precision p, cudnnConvolutionDescriptor_t desc, GpuContext& ctx,
          const std::string& what) {
  for (int i = 0; i < count; ++i) {
    const Perf& r = perf[size_t(i)];
    if (r.status != CUDNN_STATUS_SUCCESS || r.determinism != CUDNN_DETERMINISTIC) continue;
    if (r.memory > Conv::kMaxWorkspaceBytes) continue;
    cudnnMathType_t math = r.mathType;
    if (p == Precision::fp32) {
      if (math != CUDNN_FMA_MATH && math != CUDNN_DEFAULT_MATH) continue;
      math = CUDNN_FMA_MATH;
    }
    DTB_CUDNN(cudnnSetConvolutionMathType(desc, math));
    ctx.reserve_workspace(r.memory);
    return r;
  }
  throw RunFailed(what + ": cuDNN offers no deterministic algorithm within " +
                  std::to_string(Conv::kMaxWorkspaceBytes >> 20) + " MiB of workspace" +
                  (p == Precision::fp32 ? " without tensor cores" : ""));
}

}  // namespace

Conv::Conv(GpuPlan& plan, std::string name, const ConvShape& shape, size_t weight_offset, const Tensor& x)
    : name_(std::move(name)), shape_(shape), weight_offset_(weight_offset), x_(x) {
  const Precision p = plan.precision();
  GpuContext& ctx = plan.ctx();
  DTB_CUDNN(cudnnCreateFilterDescriptor(&w_desc_));
  DTB_CUDNN(cudnnSetFilter4dDescriptor(w_desc_, cudnn_type(p), CUDNN_TENSOR_NCHW, shape.out_c, shape.in_c,
                                       shape.kernel, shape.kernel));
  fwd_conv_ = make_conv_desc(shape);
  bwd_data_conv_ = make_conv_desc(shape);
  bwd_filter_conv_ = make_conv_desc(shape);

  int n = 0, c = 0, h = 0, w = 0;
  DTB_CUDNN(cudnnGetConvolution2dForwardOutputDim(fwd_conv_, x.desc, w_desc_, &n, &c, &h, &w));
  if (c != shape.out_c || h != shape.out_size(x.h) || w != shape.out_size(x.w)) {
    throw std::logic_error(name_ + ": cuDNN's output shape differs from the convolution formula");
  }
  y_ = plan.alloc(n, c, h, w, p);

  int max = 0, got = 0;
  DTB_CUDNN(cudnnGetConvolutionForwardAlgorithmMaxCount(ctx.cudnn(), &max));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> fwd(size_t(std::max(max, 1)));
  DTB_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn(), x.desc, w_desc_, fwd_conv_, y_.desc, max, &got,
                                                   fwd.data()));
  fwd_algo_ = pick(fwd, got, p, fwd_conv_, ctx, name_ + " forward").algo;

  if (plan.training()) {
    DTB_CUDNN(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(ctx.cudnn(), &max));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> bd(size_t(std::max(max, 1)));
    DTB_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx.cudnn(), w_desc_, y_.desc, bwd_data_conv_, x.desc, max,
                                                          &got, bd.data()));
    bwd_data_algo_ = pick(bd, got, p, bwd_data_conv_, ctx, name_ + " backward data").algo;
    DTB_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(ctx.cudnn(), &max));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> bf(size_t(std::max(max, 1)));
    DTB_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(ctx.cudnn(), x.desc, y_.desc, bwd_filter_conv_, w_desc_,
                                                            max, &got, bf.data()));
    bwd_filter_algo_ = pick(bf, got, p, bwd_filter_conv_, ctx, name_ + " backward filter").algo;
  }

  plan.forward(name_, [this, &plan]() {
    const float one = 1.0f, zero = 0.0f;
    GpuContext& c = plan.ctx();
    DTB_CUDNN(cudnnConvolutionForward(c.cudnn(), &one, x_.desc, x_.data, w_desc_, plan.param_c(weight_offset_),
                                      fwd_conv_, fwd_algo_, c.workspace(), c.workspace_bytes(), &zero, y_.desc,
                                      y_.data));
  });
}

Conv::~Conv() {
  if (bwd_filter_conv_ != nullptr) cudnnDestroyConvolutionDescriptor(bwd_filter_conv_);
  if (bwd_data_conv_ != nullptr) cudnnDestroyConvolutionDescriptor(bwd_data_conv_);
  if (fwd_conv_ != nullptr) cudnnDestroyConvolutionDescriptor(fwd_conv_);
  if (w_desc_ != nullptr) cudnnDestroyFilterDescriptor(w_desc_);
}

Tensor Conv::backward(GpuPlan& plan, const Tensor& dy, bool need_dx) {
  plan.backward(name_ + ".bwd_weights", [this, &plan, dy]() {
    const float one = 1.0f, zero = 0.0f;
    GpuContext& c = plan.ctx();
    DTB_CUDNN(cudnnConvolutionBackwardFilter(c.cudnn(), &one, x_.desc, x_.data, dy.desc, dy.data, bwd_filter_conv_,
                                             bwd_filter_algo_, c.workspace(), c.workspace_bytes(), &zero, w_desc_,
                                             plan.grad_c(weight_offset_)));
  });
  plan.announce(weight_offset_, shape_.weight_size(), true);
  if (!need_dx) return {};
  Tensor dx = plan.alloc(x_.n, x_.c, x_.h, x_.w, x_.dt);
  plan.backward(name_ + ".bwd_data", [this, &plan, dy, dx]() {
    const float one = 1.0f, zero = 0.0f;
    GpuContext& c = plan.ctx();
    DTB_CUDNN(cudnnConvolutionBackwardData(c.cudnn(), &one, w_desc_, plan.param_c(weight_offset_), dy.desc, dy.data,
                                           bwd_data_conv_, bwd_data_algo_, c.workspace(), c.workspace_bytes(), &zero,
                                           dx.desc, dx.data));
  });
  return dx;
}

}  // namespace dtbench::gpu
