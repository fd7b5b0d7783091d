#include "workloads/cpu/split_layer.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "workloads/cpu/linear.hpp"

namespace dtbench::cpu {

using dnnl::memory;

namespace {

// Where every split layer's allgather lands before its blocks are placed or summed: one buffer per compute
// thread, as large as the largest exchange, instead of one per layer (the exchanges run one at a time, inside
// host operations on the thread that runs the plan). It grows during the first step and then stays.
thread_local std::vector<float> exchange_scratch;
thread_local size_t training_high_water = 0;  // floats the training plans' exchanges needed (the record's figure)

float* scratch(size_t floats, bool training) {
  if (exchange_scratch.size() < floats) exchange_scratch.resize(floats);
  if (training) training_high_water = std::max(training_high_water, floats);
  return exchange_scratch.data();
}

// out = ((b_0 + b_1) + b_2) ... for the m blocks of `len` floats end to end in `blocks`: one summation order on
// every member and on both of sum_partials' paths.
void sum_in_member_order(const float* blocks, size_t len, int m, float* out) {
  std::copy_n(blocks, len, out);
  for (int j = 1; j < m; ++j)
    for (size_t k = 0; k < len; ++k) out[k] += blocks[static_cast<size_t>(j) * len + k];
}

int64_t inner_size(const memory::dims& d) {
  int64_t s = 1;
  for (size_t i = 2; i < d.size(); ++i) s *= d[i];
  return s;
}

// The exchanges around the rank's part of a split layer (see the header), appended to the plan.
class SplitExchange {
 public:
  // local_y: the rank's units' output (N x O_j x ..., any layout); units: the layer's O.
  SplitExchange(Plan& plan, const std::string& name, const memory& local_y, int64_t units, models::RowRange own)
      : name_(name), group_(&plan.context().model_parallel), units_(units), own_(own) {
    if (!group_->allgather) throw std::logic_error(name_ + ": a split layer needs the group's allgather");
    memory::dims d = local_y.get_desc().dims();
    n_ = d[0], inner_ = inner_size(d);
    own_dims_ = d;
    d[1] = units;
    dims_ = d;
    for (int j = 0; j < group_->size; ++j)
      counts_.push_back(static_cast<size_t>(n_ * models::shard_rows(units, group_->size, j).size() * inner_));
    const memory mine = plan.forward_as(local_y, plain_md(own_dims_), name_ + ".own");
    y_ = plan.alloc(plain_md(dims_));
    plan.forward_host(name_ + ".allgather", [this, mine, training = plan.training()]() {
      float* gathered = scratch(static_cast<size_t>(n_ * units_ * inner_), training);
      const float* all = gathered;
      group_->allgather(static_cast<const float*>(mine.get_data_handle()), gathered, counts_);
      // Member j's block is N x O_j x S: image i's units go to [r_j, r_{j+1}) of image i in y.
      float* y = static_cast<float*>(y_.get_data_handle());
      for (int j = 0; j < group_->size; ++j) {
        const models::RowRange r = models::shard_rows(units_, group_->size, j);
        const size_t block = static_cast<size_t>(r.size() * inner_);
        for (int64_t i = 0; i < n_; ++i)
          std::memcpy(y + (i * units_ + r.begin) * inner_, all + static_cast<size_t>(i) * block, block * sizeof(float));
        all += static_cast<size_t>(n_) * block;
      }
    });
  }

  const memory& y() const { return y_; }

  // dy (N x O x ..., any layout) -> this rank's units of it, plain fp32.
  memory own_part(Plan& plan, const memory& dy) const {
    const memory full = plan.backward_as(dy, plain_md(dims_), name_ + ".diff_dst");
    const memory part = plan.alloc(plain_md(own_dims_));
    plan.backward_host(name_ + ".diff_dst.own_units", [this, full, part]() {
      const float* from = static_cast<const float*>(full.get_data_handle());
      float* to = static_cast<float*>(part.get_data_handle());
      const size_t block = static_cast<size_t>(own_.size() * inner_);
      for (int64_t i = 0; i < n_; ++i)
        std::memcpy(to + static_cast<size_t>(i) * block, from + (i * units_ + own_.begin) * inner_, block * sizeof(float));
    });
    return part;
  }

  // This rank's partial input gradient (any layout) -> the group's sum, plain fp32, the same bits on every rank.
  // Every element is summed in member order ((p_0 + p_1) + p_2 ...) on either path, so both give the same bits.
  memory sum_partials(Plan& plan, const memory& dx_part) const {
    const memory part = plan.backward_as(dx_part, plain_md(dx_part.get_desc().dims()), name_ + ".diff_src");
    const size_t count = num_elements(part.get_desc());
    const int m = group_->size;
    const memory dx = plan.alloc(plain_md(dx_part.get_desc().dims()));
    const models::ModelParallelGroup* g = group_;
    if (m > 2 && g->alltoall) {
      // Reduce-scatter, then allgather: member j receives block j of every partial sum and adds them, and the sums
      // are gathered: 2 (m-1)/m of the gradient received per member instead of (m-1). With m = 2 both receive one
      // gradient, and one collective beats two. The blocks are fixed with the plan.
      std::vector<size_t> blocks;
      for (int j = 0; j < m; ++j) blocks.push_back(static_cast<size_t>(models::shard_rows(int64_t(count), m, j).size()));
      plan.backward_host(name_ + ".diff_src.reduce_scatter", [part, dx, blocks, m, g]() {
        const size_t own = blocks[static_cast<size_t>(g->rank)];
        float* from_all = scratch(own * static_cast<size_t>(m + 1), true);  // backward: training plans only
        float* sum = from_all + own * static_cast<size_t>(m);
        g->alltoall(static_cast<const float*>(part.get_data_handle()), from_all, blocks);
        sum_in_member_order(from_all, own, m, sum);
        g->allgather(sum, static_cast<float*>(dx.get_data_handle()), blocks);
      });
      return dx;
    }
    plan.backward_host(name_ + ".diff_src.allgather", [part, dx, count, m, g, counts = std::vector<size_t>(size_t(m), count)]() {
      float* parts = scratch(count * static_cast<size_t>(m), true);  // backward: training plans only
      g->allgather(static_cast<const float*>(part.get_data_handle()), parts, counts);
      sum_in_member_order(parts, count, m, static_cast<float*>(dx.get_data_handle()));
    });
    return dx;
  }

 private:
  std::string name_;
  const models::ModelParallelGroup* group_;  // the plan's context's, which outlives the plan
  int64_t units_, n_ = 0, inner_ = 1;
  models::RowRange own_;
  memory::dims dims_, own_dims_;
  std::vector<size_t> counts_;
  memory y_;
};

// The rank's part of a layer (its y and backward) wrapped in the group's exchanges.
template <class Layer>
LayerNode split(Plan& plan, const std::string& name, Layer* local, int64_t units, models::RowRange own) {
  SplitExchange* ex = &plan.keep<SplitExchange>(plan, name, local->y(), units, own);
  return {ex->y(), [local, ex](Plan& p, const memory& dy, bool need_dx) {
            const memory dx = local->backward(p, ex->own_part(p, dy), need_dx);
            return need_dx ? ex->sum_partials(p, dx) : memory();
          }};
}

bool whole(int64_t units, models::RowRange own) { return own.begin == 0 && own.end == units; }

}  // namespace

size_t split_layer_scratch_bytes() { return training_high_water * sizeof(float); }

LayerNode fully_connected_layer(Plan& plan, const std::string& name, int out, models::RowRange own,
                                size_t weight_offset, size_t bias_offset, const memory& x, bool plain_f32_output) {
  if (whole(out, own)) {
    Linear* fc = &plan.keep<Linear>(plan, name, out, weight_offset, bias_offset, x, plain_f32_output);
    return {fc->y(), [fc](Plan& p, const memory& dy, bool need_dx) { return fc->backward(p, dy, need_dx); }};
  }
  // The rank's features in plain fp32, which the gather reads without a reorder.
  Linear* fc = &plan.keep<Linear>(plan, name, static_cast<int>(own.size()), weight_offset, bias_offset, x, true);
  return split(plan, name, fc, out, own);
}

LayerNode convolution_layer(Plan& plan, const std::string& name, const ConvShape& shape, models::RowRange own,
                            size_t weight_offset, size_t bias_offset, const memory& x) {
  if (whole(shape.out_c, own)) {
    Conv* conv = &plan.keep<Conv>(plan, name, shape, weight_offset, bias_offset, x);
    return {conv->y(), [conv](Plan& p, const memory& dy, bool need_dx) { return conv->backward(p, dy, need_dx); }};
  }
  ConvShape part = shape;
  part.out_c = static_cast<int>(own.size());
  Conv* conv = &plan.keep<Conv>(plan, name, part, weight_offset, bias_offset, x);
  return split(plan, name, conv, shape.out_c, own);
}

}  // namespace dtbench::cpu
