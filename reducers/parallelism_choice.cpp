#include "reducers/parallelism_choice.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/linear_partition.hpp"

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

// The link a model-parallel group or a pipeline of `ranks` ranks exchanges over: the nodes' own with --intra-network
// when the group fits in one node, else the network between them.
const CostParams& group_link(const ParallelismInput& in, int ranks) {
  return in.intra_link && ranks <= in.options.ranks_per_node ? *in.intra_link : in.link;
}

}  // namespace

std::string ParallelismRow::faster() const {
  std::string best = "none";
  double fastest = 0;
  for (const auto& [name, possible, step] : {std::tuple{"data", dp_possible, dp_step_s}, std::tuple{"model", mp_possible, mp_step_s},
                                            std::tuple{"pipeline", pp_possible, pp_step_s}})
    if (possible && (best == "none" || step < fastest)) best = name, fastest = step;
  return best;
}

PipelineCost pipeline_cost(const ParallelismInput& in, int ranks) {
  PipelineCost c;
  const int layers = static_cast<int>(in.widths.size()) - 1;
  c.micro_batches = in.micro_batches > 0 ? in.micro_batches : std::min(4 * ranks, in.global_batch);
  const double m = c.micro_batches, b = in.global_batch;
  std::vector<double> macs;
  double total = 0;
  for (int l = 1; l <= layers; ++l) total += macs.emplace_back(double(in.widths[size_t(l) - 1]) * double(in.widths[size_t(l)]));
  if (ranks > layers) return c;  // not possible: the caller marks it
  c.stage_of_layer = linear_partition(macs, ranks);
  std::vector<double> stage(size_t(ranks), 0.0);
  for (int l = 0; l < layers; ++l) stage[size_t(c.stage_of_layer[size_t(l)])] += b * in.seconds_per_image * macs[size_t(l)] / total;
  const double c_max = *std::max_element(stage.begin(), stage.end());
  double sum_x = 0, x_max = 0;
  for (int l = 0; l + 1 < layers; ++l) {
    if (c.stage_of_layer[size_t(l)] == c.stage_of_layer[size_t(l) + 1]) continue;  // not a stage boundary
    const double bytes = 4 * (b / m) * double(in.widths[size_t(l) + 1]);
    CostTerms t;
    t.messages(1, bytes, in.eager_bytes);
    t.beta = bytes;
    const double x = link_seconds(t, group_link(in, ranks), bytes);
    sum_x += x, x_max = std::max(x_max, x);
  }
  const double slots = m + ranks - 1;
  c.step_s = slots * std::max(c_max / m, x_max) + 2 * sum_x;
  c.comm_s = 2 * sum_x + slots * std::max(0.0, x_max - c_max / m);
  c.idle_s = slots * c_max / m - b * in.seconds_per_image / ranks;
  return c;
}

double model_parallel_comm_seconds(const ParallelismInput& in, int ranks) {
  const double b = in.global_batch;
  const CostParams& link = group_link(in, ranks);
  double seconds = 0;
  for (size_t l = 1; l < in.widths.size(); ++l) {
    const double inputs = double(in.widths[l - 1]), outputs = double(in.widths[l]);
    seconds += link_seconds(allgather_terms(ranks, 4 * b * outputs, in.eager_bytes), link, 4 * b * outputs);
    if (l == 1) continue;  // the first layer's input gradient is not needed
    const double grad = 4 * b * inputs;  // one member's partial input gradient
    if (ranks == 2) {
      CostTerms back = allgather_terms(ranks, ranks * grad, in.eager_bytes);
      back.gamma = (ranks - 1) * grad;
      seconds += link_seconds(back, link, ranks * grad);
    } else {
      // The reduce-scatter's alltoall (the same terms as an allgather of the gradient: K - 1 blocks of grad / K
      // each way), the sum of K blocks, then the allgather of the sums.
      CostTerms scatter = allgather_terms(ranks, grad, in.eager_bytes);
      scatter.gamma = (ranks - 1) * grad / ranks;
      seconds += link_seconds(scatter, link, grad) + link_seconds(allgather_terms(ranks, grad, in.eager_bytes), link, grad);
    }
  }
  return seconds;
}

ParallelismChoice choose_parallelism(const ParallelismInput& in, const std::vector<int>& ranks) {
  if (in.widths.size() < 2) throw BadInput("parallelism: give at least two widths (inputs and outputs of one layer)");
  for (int64_t w : in.widths)
    if (w < 1) throw BadInput("parallelism: every width must be >= 1, got " + std::to_string(w));
  if (in.global_batch < 1) throw BadInput("parallelism: the global batch must be >= 1");
  if (in.micro_batches < 0) throw BadInput("parallelism: the micro-batches must be >= 0 (0: 4 per rank)");
  if (!(in.seconds_per_image > 0) || std::isinf(in.seconds_per_image))
    throw BadInput("parallelism: compute time per image must be a finite number > 0");
  if (!(in.backward_share > 0 && in.backward_share <= 1)) throw BadInput("parallelism: backward share must be in (0, 1]");
  ParallelismChoice out;
  out.input = in;
  for (size_t l = 1; l < in.widths.size(); ++l) out.weights += double(in.widths[l - 1] + 1) * double(in.widths[l]);
  allreduce_seconds(in.reducer, 2, 4 * out.weights, in.options, in.eager_bytes, in.link,
                    in.intra_link);  // BadInput without a formula
  const int64_t narrowest = *std::min_element(in.widths.begin() + 1, in.widths.end());
  for (int k : ranks) {
    if (k < 2) throw BadInput("parallelism: rank counts must be >= 2, got " + std::to_string(k));
    ParallelismRow r;
    r.ranks = k;
    r.compute_s = in.global_batch * in.seconds_per_image / k;
    r.dp_possible = k <= in.global_batch;
    r.mp_possible = k <= narrowest;
    r.dp_comm_s = allreduce_seconds(in.reducer, k, 4 * out.weights, in.options, in.eager_bytes, in.link,
                                    in.intra_link);
    r.dp_step_s = r.compute_s + std::max(0.0, r.dp_comm_s - in.backward_share * r.compute_s);
    r.mp_comm_s = model_parallel_comm_seconds(in, k);
    r.mp_step_s = r.compute_s + r.mp_comm_s;
    const PipelineCost pp = pipeline_cost(in, k);
    r.micro_batches = pp.micro_batches;
    r.pp_possible = k <= static_cast<int>(in.widths.size()) - 1 && pp.micro_batches <= in.global_batch;
    r.pp_step_s = pp.step_s, r.pp_comm_s = pp.comm_s, r.pp_idle_s = pp.idle_s;
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
  if (input.intra_link)
    out["intra_node"] = intra_node_json(input.options.ranks_per_node, *input.intra_link);
  for (const auto& r : rows)
    out["rows"].push_back({{"ranks", r.ranks},
                           {"compute_s", r.compute_s},
                           {"data_parallel_comm_s", r.dp_comm_s},
                           {"data_parallel_step_s", r.dp_step_s},
                           {"data_parallel_possible", r.dp_possible},
                           {"model_parallel_comm_s", r.mp_comm_s},
                           {"model_parallel_step_s", r.mp_step_s},
                           {"model_parallel_possible", r.mp_possible},
                           {"pipeline_micro_batches", r.micro_batches},
                           {"pipeline_comm_s", r.pp_comm_s},
                           {"pipeline_idle_s", r.pp_idle_s},
                           {"pipeline_step_s", r.pp_step_s},
                           {"pipeline_possible", r.pp_possible},
                           {"faster", r.faster()}});
  return out;
}

}  // namespace dtbench
