// A plan: every oneDNN primitive and memory of one network for one batch shape, built once and replayed.
//
// This follows oneDNN's examples/cnn_training_f32.cpp: layers are described once, their primitives are
// created for a given batch size with format_tag::any so that oneDNN picks the layouts its fastest kernels
// want (blocked, e.g. nChw16c / OIhw16i16o), activations stay in those layouts from layer to layer, and a
// reorder is inserted only where a consumer wants a different layout (or data type) than its producer wrote.
// All memories are allocated while the plan is built; a training step then only executes two lists of
// operations, forward and backward, with no allocation.
//
// Parameters, their gradients and the batch-norm running statistics are not owned by the plan: they live
// in the model's flat buffers in canonical (PyTorch) layout. Layers read them through zero-copy views, or
// through a reorder into the primitive's layout at the start of each step; gradients are written into the
// flat gradient buffer and announced (Plan::announce) as soon as they are final, so that a trainer can start
// reducing them while the rest of the backward pass runs.
//
// Layers (conv.hpp, batch_norm.hpp, ...) are created with plan.keep<Layer>(plan, name, ..., x): the
// constructor appends the forward operations, layer.backward(plan, dy) appends the backward ones (called in
// reverse layer order), and the plan keeps the layer alive.
//
// Gradient checkpointing (Chen et al. 2016; workloads/models/checkpointing.hpp for the terms). A training
// plan may cut its network into segments: the network calls begin_segment() where one starts and
// end_segment(x) where it ends. The memories allocated in between go to the forward arena, which every
// segment shares from its base (arena.hpp), and x, the segment's output, is copied into a memory of the plan's
// own: the checkpoint the next segment reads. In the backward the network calls backward_segment(dy) on
// entering each segment's backward, last segment first. For every segment but the last that appends a copy of
// dy (whose memory the next segment's backward will reuse) into a third arena, which holds one such gradient
// at a time, and then the segment's forward operations again, which rewrite the forward arena with exactly
// the values of the forward pass (same primitives, same inputs); operations appended with forward_state()
// (batch-norm running statistics) are not rerun. Each segment's backward memories go to a backward arena that
// every segment shares likewise. Memory held: the plan's own memories (with the checkpoints) plus the largest
// segment of each arena, instead of every segment's.
#pragma once

#include "workloads/models/hooks.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "workloads/cpu/arena.hpp"

namespace dtbench::cpu {

enum class Precision { fp32, bf16 };

using Args = std::unordered_map<int, dnnl::memory>;
using models::CrossReplicaSum;  // workloads/models/hooks.hpp
using models::ModelParallelGroup;
using models::OnLayerActivity;
using models::OnReady;

// One engine and one stream, shared by all plans of a model.
struct Context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  // Set: training plans build synchronised batch norm (sync_batch_norm.hpp), whose statistics are those of
  // the global batch. Empty: per-replica statistics.
  CrossReplicaSum cross_replica_sum;
  // Tensor model parallelism (split_layer.hpp): the group whose ranks hold the other output units.
  models::ModelParallelGroup model_parallel;
};

// Time spent in one operation of a plan, accumulated while profiling is on.
struct OpTime {
  std::string name;
  bool backward = false;
  double seconds = 0.0;      // total over all calls
  double min_seconds = 0.0;  // fastest call (the least disturbed by other processes)
  int64_t calls = 0;
  int unit = -1;  // the pipeline unit it belongs to (Plan::set_unit); -1: none given
};

class Plan {
 public:
  // batch: images per step; training: build backward lists and use batch statistics. The flat buffers must
  // outlive the plan and keep their addresses.
  Plan(Context& ctx, int batch, bool training, Precision precision, float* params, float* grads, float* buffers);
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  Context& context() { return ctx_; }
  const dnnl::engine& engine() const { return ctx_.engine; }
  int batch() const { return batch_; }
  bool training() const { return training_; }
  Precision precision() const { return precision_; }
  // Data type of activations and of the weights the primitives compute with (fp32 master weights stay in
  // the flat buffer).
  dnnl::memory::data_type compute_type() const;

  // Zero-copy views of the flat buffers: `md` must be a plain f32 layout of exactly the tensor's size.
  dnnl::memory param_view(size_t offset, const dnnl::memory::desc& md) const;
  dnnl::memory grad_view(size_t offset, const dnnl::memory::desc& md) const;
  dnnl::memory buffer_view(size_t offset, const dnnl::memory::desc& md) const;
  float* params() const { return params_; }
  float* grads() const { return grads_; }
  float* buffers() const { return buffers_; }

  // A memory owned by the plan, allocated now (zero-filled, so the padding of blocked layouts is zero). In a
  // checkpointing segment it lies in an arena: zero when built, but holding other segments' bytes by the time a
  // step runs, so only what the segment's forward writes (oneDNN writes the padding of its outputs) counts.
  dnnl::memory alloc(const dnnl::memory::desc& md);

  // Append an operation to the forward or backward list.
  void forward(std::string name, dnnl::primitive p, Args args);
  void forward_host(std::string name, std::function<void()> fn);
  // A forward operation that updates state kept from step to step (batch-norm running statistics): once per
  // forward pass, never again in a segment's recomputation.
  void forward_state(std::string name, std::function<void()> fn);
  void backward(std::string name, dnnl::primitive p, Args args);
  void backward_host(std::string name, std::function<void()> fn);

  // `x` in layout `md`: x itself when its layout already is md, otherwise a new plan memory filled by a
  // reorder appended to the forward (backward) list.
  dnnl::memory forward_as(const dnnl::memory& x, const dnnl::memory::desc& md, const std::string& name);
  dnnl::memory backward_as(const dnnl::memory& x, const dnnl::memory::desc& md, const std::string& name);
  // `ready` when it is already in layout md (a copy the plan keeps current anyway, such as the forward's
  // reordered weights), else `src` reordered into md on the backward list.
  dnnl::memory backward_reuse(const dnnl::memory& ready, const dnnl::memory& src, const dnnl::memory::desc& md,
                              const std::string& name);

  // Gradient checkpointing (see the top of this file). Training plans only; segments do not nest, and
  // backward_segment is called once per segment, in reverse order.
  void begin_segment();
  // Closes the segment; returns the checkpoint, a copy of x in the plan's own memory.
  dnnl::memory end_segment(const dnnl::memory& x);
  // Enters the backward of the next segment (the last one first); returns the gradient to give its layers.
  dnnl::memory backward_segment(const dnnl::memory& dy);
  int segments() const { return static_cast<int>(segments_.size()); }

  // Bytes of memory the plan holds: its own memories (activations, their gradients, workspaces, reordered
  // weights, checkpoints) and its arenas' high-water marks. Not the model's flat buffers, not the primitives'
  // scratchpads.
  size_t held_bytes() const {
    return own_bytes_ + forward_arena_.high_water() + backward_arena_.high_water() + gradient_arena_.high_water();
  }

  // Backward operation: the gradient range [offset, offset + size) of the flat buffer is final.
  void announce(size_t offset, size_t size);
  // Backward operation, to append before a conv or fc layer's own backward: when run_backward was given an
  // on_activity, hands it the layer's input x and output gradient dy in plain fp32 (K-FAC's statistics); a no-op
  // otherwise. kernel 0 means fully connected (x flattened per image), else the convolution's geometry.
  void observe_layer(const std::string& name, const dnnl::memory& x, const dnnl::memory& dy, size_t weight_offset,
                     int kernel, int stride, int pad);

  // Keeps an object (a layer holding primitive descriptors) alive as long as the plan.
  template <class T, class... A>
  T& keep(A&&... args) {
    auto p = std::make_shared<T>(std::forward<A>(args)...);
    T& ref = *p;
    kept_.push_back(std::move(p));
    return ref;
  }

  // Pipeline units (workloads/models/pipeline_units.hpp): the operations appended from now on, forward or
  // backward, belong to unit u (OpTime::unit; how a pipeline's stages are balanced by measured cost).
  void set_unit(int u) { unit_ = u; }

  void run_forward();
  // on_ready and on_activity may be empty.
  void run_backward(const OnReady& on_ready, const OnLayerActivity& on_activity = {});

  void set_profiling(bool on) { profiling_ = on; }
  // Per-operation times, forward list then backward list, in execution order.
  std::vector<OpTime> profile() const;
  void reset_profile();
  size_t num_reorders() const { return num_reorders_; }

 private:
  struct Op {
    std::string name;
    std::function<void()> run;
    double seconds = 0.0;
    double min_seconds = 0.0;
    int64_t calls = 0;
    bool rerun = true;  // false: never part of a segment's recomputation (forward_state)
    int unit = -1;
  };
  enum class Region { own, forward_arena, backward_arena, gradient_arena };  // where alloc() places a memory
  struct Segment {
    size_t first_op = 0, end_op = 0;  // its forward operations: forward_ops_[first_op, end_op)
  };
  void run_list(std::vector<Op>& ops);
  void append(std::vector<Op>& list, Op op);
  Op make_op(std::string name, dnnl::primitive p, Args args);
  dnnl::memory view(float* base, size_t offset, const dnnl::memory::desc& md) const;

  Context& ctx_;
  int batch_;
  bool training_;
  Precision precision_;
  float* params_;
  float* grads_;
  float* buffers_;
  std::vector<Op> forward_ops_;
  std::vector<Op> backward_ops_;
  std::vector<std::shared_ptr<void>> kept_;
  const OnReady* on_ready_ = nullptr;  // set only while run_backward runs
  const OnLayerActivity* on_activity_ = nullptr;  // likewise
  bool profiling_ = false;
  size_t num_reorders_ = 0;
  Region region_ = Region::own;
  Arena forward_arena_, backward_arena_, gradient_arena_;
  std::vector<Segment> segments_;
  int backward_segments_entered_ = 0;
  size_t own_bytes_ = 0;
  int unit_ = -1;
};

// Plain (row-major, PyTorch) layout for a tensor of these dimensions: x, nc, nchw.
dnnl::memory::format_tag plain_tag(size_t ndims);
dnnl::memory::desc plain_md(const dnnl::memory::dims& dims, dnnl::memory::data_type dt = dnnl::memory::data_type::f32);
// The same dimensions with format_tag::any and data type dt: lets a primitive choose.
dnnl::memory::desc any_md(const dnnl::memory::dims& dims, dnnl::memory::data_type dt);

// Copies between a memory in any layout and data type and a plain f32 host array (tests, logits, tools).
std::vector<float> read_plain(Context& ctx, const dnnl::memory& m);
void write_plain(Context& ctx, const dnnl::memory& m, const float* data);

// Number of logical elements (product of the dimensions).
size_t num_elements(const dnnl::memory::desc& md);

}  // namespace dtbench::cpu
