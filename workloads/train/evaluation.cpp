#include "workloads/train/evaluation.hpp"

#include <algorithm>
#include <span>
#include <vector>

namespace dtbench {

EvalResult evaluate_set(TrainModel& model, TrainingData& data, EvalSet set, const World& world, size_t eval_batch,
                        bool solo, Pipeline* pipeline) {
  const std::vector<uint32_t> idx = data.eval_indices(set, solo);
  double sums[3] = {0, 0, 0};  // loss x n, correct, n
  for (size_t i = 0; i < idx.size(); i += eval_batch) {
    const size_t n = std::min(eval_batch, idx.size() - i);
    data.make_eval_batch(set, std::span<const uint32_t>(idx.data() + i, n));
    const int count = static_cast<int>(n);
    const double loss = pipeline ? pipeline->evaluate(model, data.x(), data.labels(), count)
                                 : model.forward(data.x(), data.labels(), count, false);
    if (pipeline && !pipeline->last()) continue;  // only the last stage has the loss and the logits
    sums[0] += loss * static_cast<double>(n);
    sums[1] += model.correct();
    sums[2] += static_cast<double>(n);
  }
  if (!solo) world.sum(sums);
  return {sums[0] / sums[2], sums[1] / sums[2]};
}

}  // namespace dtbench
