#include "workloads/train/data_parallel.hpp"

#include <algorithm>
#include <utility>

#include "config/rules.hpp"

namespace dtbench {

DataParallel::DataParallel(const Json& cfg, const World& world, TrainModel& model, long per_rank, long global_batch,
                           int64_t steps_per_epoch, int64_t total_steps, const ModelParallel* model_parallel)
    : ranks_(model_parallel ? model_parallel->replicas() : world.size()), model_parallel_(model_parallel) {
  const Json& par = cfg["parallel"];
  local_steps_ = par["local_steps"].get<int64_t>();
  switch_step_ = config::first_local_step(par, steps_per_epoch, total_steps);
  if (par["sync_bn"].get<bool>()) {
    // Its own communicator: the batch-norm allreduces run on the compute thread while the reducer's
    // bucket allreduces may be in flight on the communication thread. With model parallelism, one rank per
    // replica (the ranks of a group hold the same batch: summed over the world, each image would count M times,
    // and the running variance's M / (M - 1) would be another).
    bn_comm_ = std::make_unique<OwnedComm>(model_parallel ? model_parallel->replica_comm() : world.comm());
    model.set_cross_replica_sum([bn = bn_comm_.get()](double* data, size_t n) { bn->sum(data, n); });
  }

  const Json& red = cfg["reducer"];
  comm_ = std::make_unique<MpiComm>(model_parallel ? model_parallel->replica_comm() : world.comm());
  comm_->set_poll_sleep_us(static_cast<int>(red["poll_us"].get<int64_t>()));
  ReducerOptions ro;
  ro.servers = static_cast<int>(red["servers"].get<int64_t>());
  ro.leader = red["leader"].get<std::string>();
  ro.ranks_per_node = static_cast<int>(red["ranks_per_node"].get<int64_t>());
  // A reducer's own refusal (shared_memory across nodes, seen alike by every rank of its communicator) is agreed on
  // over the world: each rank printed it, and with model-parallel replicas only some ranks may have it.
  std::optional<Error> refused;
  try {
    reducer_ = model.make_reducer(red["name"].get<std::string>(), *comm_, ro);
  } catch (const BadInput& e) {
    refused = e;
  }
  world.agree_on_any_error(refused);
  std::vector<TensorRange> ranges;
  for (const auto& t : model.param_table()) ranges.push_back({t.offset, t.size});
  const size_t bucket_bytes = static_cast<size_t>(red["bucket_mib"].get<double>() * 1024 * 1024);
  // The local gradient norms of the noise scale: the buckets take them from host memory, or on the gpu backend
  // have the model enqueue them on its stream, before each bucket's allreduce.
  const bool host = model.host_memory();
  // A model-parallel rank's local gradient norm is its shard's, not the replica's: no noise scale there.
  // Without it the buckets take no norms (a pass over the gradients each step, for nothing).
  const bool noise = ranks_ > 1 && !model_parallel;
  GradientBuckets::DeviceNorm device_norm;
  if (noise && !host) device_norm = [&model](size_t b, size_t offset, size_t size) { model.range_norm_sq(b, offset, size); };
  buckets_ = std::make_unique<GradientBuckets>(ranges, bucket_bytes, *reducer_, red["overlap"].get<bool>(),
                                               noise && host, std::move(device_norm));
  if (noise) noise_.emplace(static_cast<double>(per_rank), static_cast<double>(global_batch));
  // The split compares backward end times across ranks: only meaningful when they share a clock (one
  // host) and backward is timed on the host.
  same_clock_ = ranks_ > 1 && world.on_one_host() && host;
  per_replica_statistics_ = ranks_ > 1 && !bn_comm_ && !model.buffers().empty();
}

std::optional<std::vector<float>> DataParallel::average_buffers(TrainModel& model) {
  if (!per_replica_statistics_) return std::nullopt;
  const std::span<float> host = model.host_buffers();
  std::vector<float> own(host.begin(), host.end());
  auto b = model.buffers();
  reducer_->allreduce(b.data(), b.size());
  model.scale(b, 1.0f / static_cast<float>(ranks_));
  return own;
}

void DataParallel::restore_buffers(TrainModel& model, const std::vector<float>& own) {
  const std::span<float> host = model.host_buffers();
  std::copy(own.begin(), own.end(), host.begin());
  model.push_host_buffers();
}

void DataParallel::average_models(TrainModel& model) {
  if (ranks_ == 1) return;
  const float inv = 1.0f / static_cast<float>(ranks_);
  auto p = model.params();
  reducer_->allreduce(p.data(), p.size());
  model.scale(p, inv);
  auto b = model.buffers();
  if (!b.empty()) {
    reducer_->allreduce(b.data(), b.size());
    model.scale(b, inv);
  }
}

std::optional<DataParallel::OwnModel> DataParallel::average_for_evaluation(TrainModel& model, int64_t step) {
  if (ranks_ == 1 || averages_after(step)) return std::nullopt;
  const std::span<float> params = model.host_params(), buffers = model.host_buffers();
  OwnModel own{{params.begin(), params.end()}, {buffers.begin(), buffers.end()}};
  average_models(model);
  return own;
}

void DataParallel::restore_model(TrainModel& model, const OwnModel& own) {
  const std::span<float> params = model.host_params();
  std::copy(own.params.begin(), own.params.end(), params.begin());
  model.push_host_params();
  restore_buffers(model, own.buffers);
}

double DataParallel::bytes_allreduced_per_step(double gradient_bytes, double buffer_bytes, int64_t steps) const {
  if (steps <= 0) return 0;
  const int64_t sync = std::min(steps, switch_step_);  // every step of a synchronous run (switch_step_ past its end)
  const int64_t averages = steps > switch_step_ ? (steps - switch_step_) / local_steps_ : 0;
  return (static_cast<double>(sync) * gradient_bytes + static_cast<double>(averages) * (gradient_bytes + buffer_bytes)) /
         static_cast<double>(steps);
}

double DataParallel::bus_bytes(double bytes) const { return bytes * reducer_->bus_factor(ranks_); }

}  // namespace dtbench
