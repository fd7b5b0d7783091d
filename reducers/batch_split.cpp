#include "reducers/batch_split.hpp"

#include <cmath>

#include "core/error.hpp"

namespace dtbench {

ReducerOptions BatchSplitInput::unsegmented_options() {
  ReducerOptions o;
  o.segment_bytes = size_t{1} << 40;  // larger than any gradient: one message per transfer
  o.small_transfer_bytes = 0;         // no small-segment rule
  return o;
}

const BatchSplitRow& BatchSplit::row(int per_node) const {
  for (const auto& r : rows)
    if (r.per_node == per_node) return r;
  throw BadInput("batch split: no row with per-node batch " + std::to_string(per_node));
}

Json BatchSplit::to_json() const {
  Json out = {{"global_batch", input.global_batch},
              {"gradient_bytes", input.gradient_bytes},
              {"seconds_per_image", input.seconds_per_image},
              {"backward_share", input.backward_share},
              {"reducer", input.reducer},
              {"crossover_per_node", crossover_per_node},
              {"rows", Json::array()}};
  out.update(link_json(input.link));
  if (input.intra_link)
    out["intra_node"] = intra_node_json(input.options.ranks_per_node, *input.intra_link);
  for (const auto& r : rows)
    out["rows"].push_back({{"nodes", r.nodes},
                           {"per_node", r.per_node},
                           {"compute_s", r.compute_s},
                           {"window_s", r.window_s},
                           {"comm_s", r.comm_s},
                           {"hidden", r.hidden}});
  return out;
}

BatchSplit batch_split(const BatchSplitInput& in) {
  const int B = in.global_batch;
  if (B < 1 || (B & (B - 1)) != 0)
    throw BadInput("batch split: the global batch must be a power of two, got " + std::to_string(B));
  if (!(in.gradient_bytes > 0)) throw BadInput("batch split: gradient bytes must be > 0");
  if (!(in.seconds_per_image > 0)) throw BadInput("batch split: compute time per image must be > 0");
  if (!(in.backward_share > 0 && in.backward_share <= 1)) throw BadInput("batch split: backward share must be in (0, 1]");
  // BadInput without a formula, or with a link within the nodes for a reducer that has none
  allreduce_seconds(in.reducer, 2, in.gradient_bytes, in.options, in.eager_bytes, in.link,
                    in.intra_link);
  BatchSplit out;
  out.input = in;
  for (int64_t b = 1; b <= B; b *= 2) {  // 64 bits: doubling past 2^30 overflowed an int, and B / b divided by 0
    BatchSplitRow r;
    r.per_node = static_cast<int>(b);
    r.nodes = static_cast<int>(B / b);
    r.compute_s = b * in.seconds_per_image;
    r.window_s = in.backward_share * r.compute_s;
    r.comm_s = allreduce_seconds(in.reducer, r.nodes, in.gradient_bytes, in.options, in.eager_bytes, in.link,
                                 in.intra_link);
    r.hidden = r.comm_s <= r.window_s;
    if (r.hidden && out.crossover_per_node == 0) out.crossover_per_node = r.per_node;
    out.rows.push_back(r);
  }
  return out;
}

}  // namespace dtbench
