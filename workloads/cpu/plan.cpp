#include "workloads/cpu/plan.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/error.hpp"
#include "core/timer.hpp"

namespace dtbench::cpu {

using dnnl::memory;

Plan::Plan(Context& ctx, int batch, bool training, Precision precision, float* params, float* grads,
           float* buffers)
    : ctx_(ctx),
      batch_(batch),
      training_(training),
      precision_(precision),
      params_(params),
      grads_(grads),
      buffers_(buffers) {}

memory::data_type Plan::compute_type() const {
  return precision_ == Precision::bf16 ? memory::data_type::bf16 : memory::data_type::f32;
}

memory Plan::view(float* base, size_t offset, const memory::desc& md) const {
  if (base == nullptr) throw std::logic_error("plan: no flat buffer for a view");
  return memory(md, ctx_.engine, base + offset);
}
memory Plan::param_view(size_t offset, const memory::desc& md) const { return view(params_, offset, md); }
memory Plan::grad_view(size_t offset, const memory::desc& md) const { return view(grads_, offset, md); }
memory Plan::buffer_view(size_t offset, const memory::desc& md) const { return view(buffers_, offset, md); }

memory Plan::alloc(const memory::desc& md) {
  const size_t bytes = md.get_size();
  if (region_ == Region::own) {
    memory m(md, ctx_.engine);
    std::memset(m.get_data_handle(), 0, bytes);
    own_bytes_ += bytes;
    return m;
  }
  Arena& arena = region_ == Region::forward_arena    ? forward_arena_
                 : region_ == Region::backward_arena ? backward_arena_
                                                     : gradient_arena_;
  void* p = arena.take(bytes);
  std::memset(p, 0, bytes);
  return memory(md, ctx_.engine, p);
}

namespace {

// An operation copying src into dst (same layout).
std::function<void()> copy_op(const memory& src, const memory& dst) {
  return [src, dst]() { std::memcpy(dst.get_data_handle(), src.get_data_handle(), src.get_desc().get_size()); };
}

}  // namespace

void Plan::begin_segment() {
  if (!training_) throw std::logic_error("plan: gradient checkpointing in an evaluation plan");
  if (region_ != Region::own || backward_segments_entered_ != 0)
    throw std::logic_error("plan: begin_segment inside a segment or after the backward began");
  region_ = Region::forward_arena;
  forward_arena_.reset();
  segments_.push_back({forward_ops_.size(), 0});
}

memory Plan::end_segment(const memory& x) {
  if (region_ != Region::forward_arena) throw std::logic_error("plan: end_segment outside a segment");
  segments_.back().end_op = forward_ops_.size();
  region_ = Region::own;
  memory checkpoint = alloc(x.get_desc());
  forward_host("segment" + std::to_string(segments_.size() - 1) + ".checkpoint", copy_op(x, checkpoint));
  return checkpoint;
}

memory Plan::backward_segment(const memory& dy) {
  if (region_ == Region::forward_arena) throw std::logic_error("plan: backward_segment inside a forward segment");
  const int s = static_cast<int>(segments_.size()) - 1 - backward_segments_entered_++;
  if (s < 0) throw std::logic_error("plan: backward_segment for more segments than were built");
  memory g = dy;
  if (s + 1 < static_cast<int>(segments_.size())) {
    // dy is in the backward arena, which this segment's backward reuses: copy it out first. Then the
    // recomputation, which rewrites the forward arena with this segment's activations.
    // Only the segment being differentiated needs its incoming gradient: one arena holds them all in turn.
    region_ = Region::gradient_arena;
    gradient_arena_.reset();
    g = alloc(dy.get_desc());
    backward_host("segment" + std::to_string(s) + ".diff_dst", copy_op(dy, g));
    const size_t first = segments_[s].first_op, end = segments_[s].end_op;
    backward_host("segment" + std::to_string(s) + ".recompute", [this, first, end]() {
      for (size_t i = first; i < end; ++i)
        if (forward_ops_[i].rerun) forward_ops_[i].run();
    });
  }
  // The last segment's activations are still in the forward arena: nothing to recompute.
  region_ = Region::backward_arena;
  backward_arena_.reset();
  return g;
}

Plan::Op Plan::make_op(std::string name, dnnl::primitive p, Args args) {
  // Every argument must match what the primitive was created for; oneDNN only says "could not execute".
  const_dnnl_primitive_desc_t pd = p.get_primitive_desc();
  for (const auto& [arg, mem] : args) {
    const dnnl_memory_desc_t* want = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
    const memory::desc have = mem.get_desc();
    if (want == nullptr || want->ndims == 0 || !dnnl_memory_desc_equal(want, &have.data)) {
      throw std::logic_error("plan: argument " + std::to_string(arg) + " of operation '" + name +
                             "' does not match its primitive");
    }
  }
  for (int arg : {DNNL_ARG_SRC, DNNL_ARG_SRC_1, DNNL_ARG_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_MEAN,
                  DNNL_ARG_VARIANCE, DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_WORKSPACE, DNNL_ARG_DIFF_SRC,
                  DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_BIAS, DNNL_ARG_DIFF_SCALE,
                  DNNL_ARG_DIFF_SHIFT}) {
    const dnnl_memory_desc_t* want = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
    // Batch norm also answers for WEIGHTS (DIFF_WEIGHTS) with its scale: the pre-2.3 scale-shift argument.
    const bool alias = (arg == DNNL_ARG_WEIGHTS && args.count(DNNL_ARG_SCALE)) ||
                       (arg == DNNL_ARG_DIFF_WEIGHTS && args.count(DNNL_ARG_DIFF_SCALE));
    if (want != nullptr && want->ndims != 0 && args.count(arg) == 0 && !alias) {
      throw std::logic_error("plan: operation '" + name + "' lacks argument " + std::to_string(arg));
    }
  }
  Op op;
  op.name = std::move(name);
  op.run = [this, p = std::move(p), args = std::move(args)]() { p.execute(ctx_.stream, args); };
  return op;
}

void Plan::append(std::vector<Op>& list, Op op) {
  op.unit = unit_;
  list.push_back(std::move(op));
}
void Plan::forward(std::string name, dnnl::primitive p, Args args) {
  append(forward_ops_, make_op(std::move(name), std::move(p), std::move(args)));
}
void Plan::backward(std::string name, dnnl::primitive p, Args args) {
  append(backward_ops_, make_op(std::move(name), std::move(p), std::move(args)));
}
void Plan::forward_host(std::string name, std::function<void()> fn) {
  append(forward_ops_, Op{std::move(name), std::move(fn)});
}
void Plan::forward_state(std::string name, std::function<void()> fn) {
  append(forward_ops_, Op{std::move(name), std::move(fn)});
  forward_ops_.back().rerun = false;
}
void Plan::backward_host(std::string name, std::function<void()> fn) {
  append(backward_ops_, Op{std::move(name), std::move(fn)});
}

memory Plan::forward_as(const memory& x, const memory::desc& md, const std::string& name) {
  if (x.get_desc() == md) return x;
  memory y = alloc(md);
  forward(name + ".reorder", dnnl::reorder(x, y), {{DNNL_ARG_FROM, x}, {DNNL_ARG_TO, y}});
  ++num_reorders_;
  return y;
}

memory Plan::backward_as(const memory& x, const memory::desc& md, const std::string& name) {
  if (x.get_desc() == md) return x;
  memory y = alloc(md);
  backward(name + ".reorder", dnnl::reorder(x, y), {{DNNL_ARG_FROM, x}, {DNNL_ARG_TO, y}});
  ++num_reorders_;
  return y;
}

memory Plan::backward_reuse(const memory& ready, const memory& src, const memory::desc& md, const std::string& name) {
  return ready.get_desc() == md ? ready : backward_as(src, md, name);
}

void Plan::announce(size_t offset, size_t size) {
  backward_host("announce", [this, offset, size]() {
    if (on_ready_ != nullptr && *on_ready_) (*on_ready_)(offset, size);
  });
}

void Plan::observe_layer(const std::string& name, const memory& x, const memory& dy, size_t weight_offset,
                         int kernel, int stride, int pad) {
  backward_host(name + ".activity", [this, x, dy, weight_offset, kernel, stride, pad]() {
    if (on_activity_ == nullptr || !*on_activity_) return;
    const memory::dims xd = x.get_desc().dims(), yd = dy.get_desc().dims();
    const std::vector<float> xs = read_plain(ctx_, x), ds = read_plain(ctx_, dy);
    optim::LayerActivity a;
    a.weight_offset = weight_offset;
    a.n = static_cast<int>(xd[0]);
    a.x = xs.data();
    a.dy = ds.data();
    a.out_c = static_cast<int>(yd[1]);
    if (kernel == 0) {
      a.in_c = static_cast<int>(xs.size() / size_t(xd[0]));
    } else {
      a.in_c = static_cast<int>(xd[1]), a.in_h = static_cast<int>(xd[2]), a.in_w = static_cast<int>(xd[3]);
      a.out_h = static_cast<int>(yd[2]), a.out_w = static_cast<int>(yd[3]);
      a.kernel = kernel, a.stride = stride, a.pad = pad;
    }
    (*on_activity_)(a);
  });
}

void Plan::run_list(std::vector<Op>& ops) {
  for (Op& op : ops) {
    try {
      if (!profiling_) {
        op.run();
        continue;
      }
      double t0 = now_seconds();
      op.run();
      ctx_.stream.wait();
      const double t = now_seconds() - t0;
      op.seconds += t;
      op.min_seconds = op.calls == 0 ? t : std::min(op.min_seconds, t);
      ++op.calls;
    } catch (const dnnl::error& e) {
      throw RunFailed("oneDNN failed in operation '" + op.name + "' (batch " + std::to_string(batch_) +
                      "): " + e.what());
    }
  }
  ctx_.stream.wait();
}

void Plan::run_forward() { run_list(forward_ops_); }

void Plan::run_backward(const OnReady& on_ready, const OnLayerActivity& on_activity) {
  if (!training_) throw std::logic_error("plan: backward on an evaluation plan");
  on_ready_ = &on_ready;
  on_activity_ = &on_activity;
  try {
    run_list(backward_ops_);
  } catch (...) {
    on_ready_ = nullptr;
    on_activity_ = nullptr;
    throw;
  }
  on_ready_ = nullptr;
  on_activity_ = nullptr;
}

std::vector<OpTime> Plan::profile() const {
  std::vector<OpTime> out;
  for (const Op& op : forward_ops_) out.push_back({op.name, false, op.seconds, op.min_seconds, op.calls, op.unit});
  for (const Op& op : backward_ops_) out.push_back({op.name, true, op.seconds, op.min_seconds, op.calls, op.unit});
  return out;
}

void Plan::reset_profile() {
  for (Op& op : forward_ops_) op.seconds = 0.0, op.min_seconds = 0.0, op.calls = 0;
  for (Op& op : backward_ops_) op.seconds = 0.0, op.min_seconds = 0.0, op.calls = 0;
}

memory::format_tag plain_tag(size_t ndims) {
  switch (ndims) {
    case 1: return memory::format_tag::a;
    case 2: return memory::format_tag::ab;
    case 3: return memory::format_tag::abc;
    case 4: return memory::format_tag::abcd;
    case 5: return memory::format_tag::abcde;
    default: throw std::logic_error("plain_tag: unsupported number of dimensions");
  }
}

memory::desc plain_md(const memory::dims& dims, memory::data_type dt) {
  return memory::desc(dims, dt, plain_tag(dims.size()));
}

memory::desc any_md(const memory::dims& dims, memory::data_type dt) {
  return memory::desc(dims, dt, memory::format_tag::any);
}

size_t num_elements(const memory::desc& md) {
  // The C descriptor's dims, not md.dims(): no vector to allocate (whose inlined free GCC 12 misreads as a
  // -Wfree-nonheap-object fault).
  size_t n = 1;
  for (int i = 0; i < md.data.ndims; ++i) n *= static_cast<size_t>(md.data.dims[i]);
  return n;
}

std::vector<float> read_plain(Context& ctx, const memory& m) {
  memory::desc md = m.get_desc();
  std::vector<float> out(num_elements(md));
  memory dst(plain_md(md.dims()), ctx.engine, out.data());
  dnnl::reorder(m, dst).execute(ctx.stream, const_cast<memory&>(m), dst);
  ctx.stream.wait();
  return out;
}

void write_plain(Context& ctx, const memory& m, const float* data) {
  memory::desc md = m.get_desc();
  memory src(plain_md(md.dims()), ctx.engine, const_cast<float*>(data));
  memory dst = m;
  dnnl::reorder(src, dst).execute(ctx.stream, src, dst);
  ctx.stream.wait();
}

}  // namespace dtbench::cpu
