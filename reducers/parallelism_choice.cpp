#include "reducers/parallelism_choice.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace dtbench {

namespace {

// A ring allgather of `bytes` in all on `ranks` ranks: ranks - 1 messages of bytes / ranks on the critical path.
CostTerms allgather_terms(int ranks, double bytes, double eager_bytes) {
  CostTerms t;
  t.messages(ranks - 1, bytes / ranks, eager_bytes);
  t.beta = (ranks - 1) * bytes / ranks;
  return t;
}

}  // namespace

std::string ParallelismRow::faster() const {
  if (!dp_possible && !mp_possible) return "none";
  if (!mp_possible) return "data";
  if (!dp_possible) return "model";
  return mp_step_s < dp_step_s ? "model" : "data";
}

double model_parallel_comm_seconds(const ParallelismInput& in, int ranks) {
  const double b = in.global_batch;
  double seconds = 0;
  for (size_t l = 1; l < in.widths.size(); ++l) {
    const double inputs = double(in.widths[l - 1]), outputs = double(in.widths[l]);
    seconds += predict_seconds(allgather_terms(ranks, 4 * b * outputs, in.eager_bytes), in.link);
    if (l == 1) continue;  // the first layer's input gradient is not needed
    CostTerms back = allgather_terms(ranks, 4 * ranks * b * inputs, in.eager_bytes);
    back.gamma = (ranks - 1) * 4 * b * inputs;
    seconds += predict_seconds(back, in.link);
  }
  return seconds;
}

ParallelismChoice choose_parallelism(const ParallelismInput& in, const std::vector<int>& ranks) {
  if (in.widths.size() < 2) throw BadInput("parallelism: give at least two widths (inputs and outputs of one layer)");
  for (int64_t w : in.widths)
    if (w < 1) throw BadInput("parallelism: every width must be >= 1, got " + std::to_string(w));
  if (in.global_batch < 1) throw BadInput("parallelism: the global batch must be >= 1");
  if (!(in.seconds_per_image > 0) || std::isinf(in.seconds_per_image))
    throw BadInput("parallelism: compute time per image must be a finite number > 0");
  if (!(in.backward_share > 0 && in.backward_share <= 1)) throw BadInput("parallelism: backward share must be in (0, 1]");
  ParallelismChoice out;
  out.input = in;
  for (size_t l = 1; l < in.widths.size(); ++l) out.weights += double(in.widths[l - 1] + 1) * double(in.widths[l]);
  cost_terms(in.reducer, 2, 4 * out.weights, in.options, in.eager_bytes);  // BadInput without a formula
  const int64_t narrowest = *std::min_element(in.widths.begin() + 1, in.widths.end());
  for (int k : ranks) {
    if (k < 2) throw BadInput("parallelism: rank counts must be >= 2, got " + std::to_string(k));
    ParallelismRow r;
    r.ranks = k;
    r.compute_s = in.global_batch * in.seconds_per_image / k;
    r.dp_possible = k <= in.global_batch;
    r.mp_possible = k <= narrowest;
    r.dp_comm_s = predict_seconds(cost_terms(in.reducer, k, 4 * out.weights, in.options, in.eager_bytes), in.link);
    r.dp_step_s = r.compute_s + std::max(0.0, r.dp_comm_s - in.backward_share * r.compute_s);
    r.mp_comm_s = model_parallel_comm_seconds(in, k);
    r.mp_step_s = r.compute_s + r.mp_comm_s;
    out.rows.push_back(r);
  }
  return out;
}

Json ParallelismChoice::to_json() const {
  Json out = {{"widths", input.widths},
              {"weights", weights},
              {"global_batch", input.global_batch},
              {"seconds_per_image", input.seconds_per_image},
              {"backward_share", input.backward_share},
              {"reducer", input.reducer},
              {"rows", Json::array()}};
  out.update(link_json(input.link));
  for (const auto& r : rows)
    out["rows"].push_back({{"ranks", r.ranks},
                           {"compute_s", r.compute_s},
                           {"data_parallel_comm_s", r.dp_comm_s},
                           {"data_parallel_step_s", r.dp_step_s},
                           {"data_parallel_possible", r.dp_possible},
                           {"model_parallel_comm_s", r.mp_comm_s},
                           {"model_parallel_step_s", r.mp_step_s},
                           {"model_parallel_possible", r.mp_possible},
                           {"faster", r.faster()}});
  return out;
}

}  // namespace dtbench
