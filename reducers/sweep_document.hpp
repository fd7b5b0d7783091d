// The document `dtbench allreduce --json` writes, as the cost model reads it (reducers/cost_model.hpp):
// every field the fit uses is checked for its type and range before any is used, so a hand-edited or
// foreign file is bad input naming the field, never a wrapped number or an internal error.
#pragma once

#include "core/json.hpp"
#include "reducers/reducer_options.hpp"

namespace dtbench {

// Throws BadInput "/rows/3/bytes: expected an integer in [0, 1099511627776], got -5" for the first field
// that is missing, of the wrong type or out of range: /kind "dtbench.allreduce"; /options segment_bytes,
// small_segment_bytes and small_transfer_bytes (optional: older sweeps lack them), servers, and leader and
// ranks_per_node (optional; the leader is checked where the sweep has hierarchical rows); /ranks; /nodes
// (optional: one node number per rank); /provenance/cpu/logical_cores (optional); each of /rows: bytes, reducer,
// wrong, time_us and time_median_us (optional); each of /reduction: bytes, time_us and time_median_us (optional).
void check_sweep_document(const Json& doc);

// The segment sizes and servers a checked sweep (check_sweep_document) was taken with: what its algorithms' cost and
// traffic formulas read (defaults where an older sweep lacks a size).
ReducerOptions sweep_options(const Json& doc);

// Whether the sweep measured the hierarchical reducer (its /options/leader and nodes then matter). Any document:
// a malformed row counts as not hierarchical.
bool has_hierarchical_rows(const Json& doc);

}  // namespace dtbench
