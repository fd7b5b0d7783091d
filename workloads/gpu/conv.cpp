#include "workloads/gpu/conv.hpp"

#include <vector>

#include "core/error.hpp"
#include "workloads/gpu/kernels.hpp"
#include "workloads/gpu/lib_check.hpp"

namespace dtbench::gpu {

namespace {

CudnnConvDesc make_conv_desc(const ConvShape& s, Precision p) {
  CudnnConvDesc d;
  DTB_CUDNN(cudnnCreateConvolutionDescriptor(d.out()));
  DTB_CUDNN(cudnnSetConvolution2dDescriptor(d.get(), s.pad, s.pad, s.stride, s.stride, 1, 1,
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  // Before the heuristics are asked: they rank what this math type allows. fp32 gets FMA kernels only (no
  // TF32); bf16 and fp16 may use tensor cores.
  DTB_CUDNN(cudnnSetConvolutionMathType(d.get(), p == Precision::fp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
  return d;
}

// FFT and Winograd transform the data and round in the transformed domain: their fp32 error is well above
// fp32 rounding of the direct sum, beyond the layer tolerances the GPU tests hold the CPU twin to.
bool transformed(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool transformed(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool transformed(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

// Picks the first heuristic result (cuDNN ranks them fastest first) that ran, is deterministic and, in fp32,
// uses FMA math and no transform. Its math type is set on the descriptor, then its workspace is asked for
// with that math type (`workspace_of(algo)`: the GetWorkspaceSize call of this direction; the heuristics'
// estimate may be another engine's), and it must fit kMaxWorkspaceBytes. The shared workspace is grown to it.
template <class Perf, class WorkspaceOf>
auto pick(const std::vector<Perf>& perf, int count, Precision p, cudnnConvolutionDescriptor_t desc, GpuContext& ctx,
          WorkspaceOf workspace_of, const std::string& what) -> decltype(Perf::algo) {
  for (int i = 0; i < count; ++i) {
    const Perf& r = perf[size_t(i)];
    if (r.status != CUDNN_STATUS_SUCCESS || r.determinism != CUDNN_DETERMINISTIC) continue;
    cudnnMathType_t math = r.mathType;
    if (p == Precision::fp32) {
      if ((math != CUDNN_FMA_MATH && math != CUDNN_DEFAULT_MATH) || transformed(r.algo)) continue;
      math = CUDNN_FMA_MATH;
    }
    DTB_CUDNN(cudnnSetConvolutionMathType(desc, math));
    const size_t bytes = workspace_of(r.algo);
    if (bytes > Conv::kMaxWorkspaceBytes) continue;
    ctx.reserve_workspace(bytes);
    return r.algo;
  }
  throw RunFailed(what + ": cuDNN offers no deterministic algorithm within " +
                  std::to_string(Conv::kMaxWorkspaceBytes >> 20) + " MiB of workspace" +
                  (p == Precision::fp32 ? " with FMA math and no FFT or Winograd transform" : ""));
}

}  // namespace

Conv::Conv(GpuPlan& plan, std::string name, const ConvShape& shape, size_t weight_offset, const Tensor& x,
           size_t bias_offset)
    : name_(std::move(name)), shape_(shape), weight_offset_(weight_offset), bias_offset_(bias_offset), x_(x) {
  const Precision p = plan.precision();
  GpuContext& ctx = plan.ctx();
  cudnnHandle_t h = ctx.cudnn();
  DTB_CUDNN(cudnnCreateFilterDescriptor(w_desc_.out()));
  DTB_CUDNN(cudnnSetFilter4dDescriptor(w_desc_.get(), cudnn_type(p), CUDNN_TENSOR_NCHW, shape.out_c, shape.in_c,
                                       shape.kernel, shape.kernel));
  fwd_conv_ = make_conv_desc(shape, p);
  bwd_data_conv_ = make_conv_desc(shape, p);
  bwd_filter_conv_ = make_conv_desc(shape, p);
  cudnnFilterDescriptor_t w = w_desc_.get();

  int n = 0, c = 0, hh = 0, ww = 0;
  DTB_CUDNN(cudnnGetConvolution2dForwardOutputDim(fwd_conv_.get(), x.desc, w, &n, &c, &hh, &ww));
  if (c != shape.out_c || hh != shape.out_size(x.h) || ww != shape.out_size(x.w)) {
    throw std::logic_error(name_ + ": cuDNN's output shape differs from the convolution formula");
  }
  y_ = plan.alloc(n, c, hh, ww, p);

  int max = 0, got = 0;
  DTB_CUDNN(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> fwd(size_t(std::max(max, 1)));
  DTB_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(h, x.desc, w, fwd_conv_.get(), y_.desc, max, &got, fwd.data()));
  fwd_algo_ = pick(
      fwd, got, p, fwd_conv_.get(), ctx,
      [&](cudnnConvolutionFwdAlgo_t a) {
        size_t b = 0;
        DTB_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(h, x.desc, w, fwd_conv_.get(), y_.desc, a, &b));
        return b;
      },
      name_ + " forward");

  if (plan.training()) {
    DTB_CUDNN(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> bd(size_t(std::max(max, 1)));
    DTB_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w, y_.desc, bwd_data_conv_.get(), x.desc, max, &got,
                                                          bd.data()));
    bwd_data_algo_ = pick(
        bd, got, p, bwd_data_conv_.get(), ctx,
        [&](cudnnConvolutionBwdDataAlgo_t a) {
          size_t b = 0;
          DTB_CUDNN(cudnnGetConvolutionBackwardDataWorkspaceSize(h, w, y_.desc, bwd_data_conv_.get(), x.desc, a, &b));
          return b;
        },
        name_ + " backward data");
    DTB_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> bf(size_t(std::max(max, 1)));
    DTB_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x.desc, y_.desc, bwd_filter_conv_.get(), w, max, &got,
                                                            bf.data()));
    bwd_filter_algo_ = pick(
        bf, got, p, bwd_filter_conv_.get(), ctx,
        [&](cudnnConvolutionBwdFilterAlgo_t a) {
          size_t b = 0;
          DTB_CUDNN(
              cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x.desc, y_.desc, bwd_filter_conv_.get(), w, a, &b));
          return b;
        },
        name_ + " backward filter");
  }

  plan.forward(name_, [this, &plan]() {
    const float one = 1.0f, zero = 0.0f;
    GpuContext& c = plan.ctx();
    DTB_CUDNN(cudnnConvolutionForward(c.cudnn(), &one, x_.desc, x_.data, w_desc_.get(), plan.param_c(weight_offset_),
                                      fwd_conv_.get(), fwd_algo_, c.workspace(), c.workspace_bytes(), &zero, y_.desc,
                                      y_.data));
    if (bias_offset_ != kNoBias) {
      kernels::add_bias_channels(y_.data, y_.dt, plan.weights().params + bias_offset_, y_.n, y_.c,
                                 size_t(y_.h) * size_t(y_.w), plan.stream());
    }
  });
}

Tensor Conv::backward(GpuPlan& plan, const Tensor& dy, bool need_dx) {
  plan.backward(name_ + ".bwd_weights", [this, &plan, dy]() {
    const float one = 1.0f, zero = 0.0f;
    GpuContext& c = plan.ctx();
    DTB_CUDNN(cudnnConvolutionBackwardFilter(c.cudnn(), &one, x_.desc, x_.data, dy.desc, dy.data, bwd_filter_conv_.get(),
                                             bwd_filter_algo_, c.workspace(), c.workspace_bytes(), &zero, w_desc_.get(),
                                             plan.grad_c(weight_offset_)));
    if (bias_offset_ != kNoBias) {
      kernels::bias_grad_channels(plan.weights().grads + bias_offset_, dy.data, dy.dt, dy.n, dy.c,
                                  size_t(dy.h) * size_t(dy.w), plan.stream());
    }
  });
  if (bias_offset_ != kNoBias) plan.announce(bias_offset_, size_t(shape_.out_c), false);
  plan.announce(weight_offset_, shape_.weight_size(), true);
  if (!need_dx) return {};
  Tensor dx = plan.alloc(x_.n, x_.c, x_.h, x_.w, x_.dt);
  plan.backward(name_ + ".bwd_data", [this, &plan, dy, dx]() {
    const float one = 1.0f, zero = 0.0f;
    GpuContext& c = plan.ctx();
    DTB_CUDNN(cudnnConvolutionBackwardData(c.cudnn(), &one, w_desc_.get(), plan.param_c(weight_offset_), dy.desc, dy.data,
                                           bwd_data_conv_.get(), bwd_data_algo_, c.workspace(), c.workspace_bytes(), &zero,
                                           dx.desc, dx.data));
  });
  return dx;
}

}  // namespace dtbench::gpu
