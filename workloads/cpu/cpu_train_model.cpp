// /backend "cpu": the oneDNN model (model.hpp) and a host optimizer (optim/) behind TrainModel.
#include <omp.h>

#include "optim/kfac.hpp"
#include "workloads/backend/train_model.hpp"
#include "workloads/cpu/model.hpp"
#include "workloads/models/optimizer_table.hpp"
#include "workloads/models/pipeline_units.hpp"

namespace dtbench {

namespace {

class CpuTrainModel final : public TrainModel {
 public:
  CpuTrainModel(const models::ModelSpec& spec, uint64_t seed, const Json& optimizer_section)
      : model_(spec, seed),
        opt_(optim::make_optimizer(optimizer_section, models::optimizer_table(model_.param_table()), seed)),
        kfac_(dynamic_cast<optim::Kfac*>(opt_.get())) {}

  std::string backend() const override { return "cpu"; }
  bool host_memory() const override { return true; }
  std::span<float> params() override { return model_.params(); }
  std::span<float> grads() override { return model_.grads(); }
  std::span<float> buffers() override { return model_.buffers(); }
  const std::vector<models::ParamInfo>& param_table() const override { return model_.param_table(); }
  double flops_per_sample_train() const override { return model_.flops_per_sample_train(); }
  double rank_flops_per_sample_train() const override { return model_.rank_flops_per_sample_train(); }
  size_t activation_bytes() const override { return model_.training_plan_bytes(); }

  double forward(const float* x, const int32_t* labels, int n, bool train) override {
    return model_.forward(x, labels, n, train);
  }
  void backward(const std::function<void(size_t, size_t)>& on_ready) override {
    if (kfac_ != nullptr && kfac_->wants_statistics()) {
      model_.backward(on_ready, [this](const optim::LayerActivity& a) { kfac_->observe(a); });
      return;
    }
    model_.backward(on_ready);
  }
  int correct() const override { return model_.correct(); }

  void accumulate_grads(bool first) override {
    auto g = model_.grads();
    if (first) {
      accumulated_.assign(g.begin(), g.end());
      return;
    }
    for (size_t i = 0; i < g.size(); ++i) accumulated_[i] += g[i];
  }
  void finish_accumulation(size_t offset, size_t size, float s) override {
    float* g = model_.grads().data() + offset;
    const float* a = accumulated_.data() + offset;
    for (size_t i = 0; i < size; ++i) g[i] = (g[i] + a[i]) * s;
  }

  void scale(std::span<float> flat, float s) override {
    for (float& v : flat) v *= s;
  }
  double grads_norm_sq() override {
    double sum = 0;
    for (float g : model_.grads()) sum += static_cast<double>(g) * g;
    return sum;
  }

  std::span<float> host_params() override { return model_.params(); }
  void push_host_params() override {}
  std::span<float> host_buffers() override { return model_.buffers(); }
  void push_host_buffers() override {}

  bool step_allowed() override { return true; }
  void optimizer_step(double lr) override { opt_->step(model_.params(), model_.grads(), lr); }
  std::vector<uint8_t> optimizer_state() const override { return opt_->save_state(); }
  void load_optimizer_state(std::span<const uint8_t> bytes) override { opt_->load_state(bytes); }
  optim::Optimizer* host_optimizer() override { return opt_.get(); }
  std::span<float> curvature_statistics() override {
    return kfac_ != nullptr ? kfac_->statistics() : std::span<float>();
  }

  std::unique_ptr<Reducer> make_reducer(const std::string& name, Comm& comm, const ReducerOptions& o) override {
    if (name == "nccl") throw BadInput("/reducer/name: \"nccl\" needs the gpu backend");
    return dtbench::make_reducer(name, comm, o);
  }
  void set_cross_replica_sum(cpu::CrossReplicaSum sum) override { model_.set_cross_replica_sum(std::move(sum)); }
  void set_model_parallel_group(cpu::ModelParallelGroup group) override {
    model_.set_model_parallel_group(std::move(group));
  }
  void set_slot(int slot) override { model_.set_slot(slot); }
  void set_batch_position(const models::BatchPosition& at) override { model_.set_batch_position(at); }
  const float* stage_output() override { return model_.stage_output(); }
  void set_output_gradient(const float* dy) override { model_.set_output_gradient(dy); }
  const float* input_gradient() override { return model_.input_gradient(); }
  size_t stage_output_floats(int n) const override { return model_.stage_output_floats(n); }
  size_t stage_input_floats(int n) const override { return model_.stage_input_floats(n); }

 private:
  cpu::Model model_;
  std::unique_ptr<optim::Optimizer> opt_;
  optim::Kfac* kfac_;  // opt_ when it is K-FAC, else null
  std::vector<float> accumulated_;  // the micro-batches' gradient sum so far
};

}  // namespace

std::vector<double> measure_cpu_unit_seconds(const models::ModelSpec& spec, int n, int steps, uint64_t seed) {
  cpu::Model model(spec, seed);
  // Values do not change the cost of these layers; a fixed pattern keeps the measurement reproducible.
  const auto pattern = [](size_t floats) {
    std::vector<float> v(floats);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
    return v;
  };
  const std::vector<float> x = pattern(model.stage_input_floats(n)), dy = pattern(model.stage_output_floats(n));
  std::vector<int32_t> labels(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) labels[size_t(i)] = i % spec.classes;
  model.set_profiling(true);
  // Each operation's fastest call counts (OpTime::min_seconds): the first step's, which builds the plan and
  // touches its memory first, never is.
  for (int s = 0; s < steps + 1; ++s) {
    model.set_batch_position({static_cast<uint64_t>(s), 0});
    model.forward(x.data(), labels.data(), n, true);
    if (!models::last_stage(spec)) model.set_output_gradient(dy.data());
    model.backward();
  }
  return model.unit_seconds(n);
}

std::unique_ptr<TrainModel> make_cpu_train_model(const models::ModelSpec& spec, uint64_t seed,
                                                  const Json& optimizer_section) {
  return std::make_unique<CpuTrainModel>(spec, seed, optimizer_section);
}

}  // namespace dtbench
