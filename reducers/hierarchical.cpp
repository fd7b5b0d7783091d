#include "reducers/hierarchical.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "reducers/exchange.hpp"
#include "reducers/mpi_comm.hpp"
#include "reducers/registry.hpp"

namespace dtbench {
namespace {

// The leader algorithm's options among L leaders: the same segmenting, at most L servers, no nodes of its own.
ReducerOptions leader_options(const ReducerOptions& o, int leaders) {
  ReducerOptions l = o;
  l.ranks_per_node = 0;
  l.nodes.clear();
  l.servers = std::clamp(o.servers, 1, leaders);
  return l;
}

}  // namespace

std::vector<std::string> Hierarchical::leader_names() {
  std::vector<std::string> out;
  for (const std::string& n : reducer_names())
    if (n != "hierarchical" && n != "shared_memory") out.push_back(n);
  return out;
}

void Hierarchical::check_leader(const std::string& leader) {
  const std::vector<std::string> names = leader_names();
  if (std::find(names.begin(), names.end(), leader) == names.end()) {
    std::string valid;
    for (const std::string& n : names) valid += (valid.empty() ? "" : ", ") + n;
    throw BadInput("hierarchical: leader reducer '" + leader + "' cannot run among the node leaders (" +
                   (leader == "shared_memory" ? "the leaders are on different nodes" : "not a flat host algorithm") +
                   "); valid leaders: " + valid);
  }
}

namespace {

// Ranks per node (g_k) and the ranks of each node, from a layout.
std::vector<std::vector<int>> groups_of(const std::vector<int>& nodes) {
  std::vector<std::vector<int>> g;
  for (int r = 0; r < static_cast<int>(nodes.size()); ++r) {
    const size_t k = static_cast<size_t>(nodes[size_t(r)]);
    if (g.size() <= k) g.resize(k + 1);
    g[k].push_back(r);
  }
  return g;
}

}  // namespace

std::vector<int> Hierarchical::node_layout(int ranks, const ReducerOptions& o, const Comm* comm) {
  if (o.ranks_per_node < 0) throw BadInput("hierarchical: ranks_per_node must be >= 0, got " + std::to_string(o.ranks_per_node));
  std::vector<int> nodes(static_cast<size_t>(ranks), 0);
  if (o.ranks_per_node > 0) {
    for (int r = 0; r < ranks; ++r) nodes[size_t(r)] = r / o.ranks_per_node;
    return nodes;
  }
  if (!o.nodes.empty()) {
    nodes = o.nodes;
  } else if (comm != nullptr) {
    nodes = comm->nodes();
  }
  if (static_cast<int>(nodes.size()) != ranks || misnumbered_node(std::vector<int64_t>(nodes.begin(), nodes.end())))
    throw BadInput("hierarchical: the node layout must give each of the " + std::to_string(ranks) +
                   " ranks a node, numbered 0, 1, ... in the order of each node's lowest rank");
  return nodes;
}

std::string Hierarchical::leader_servers_problem(const std::string& leader, int64_t servers, int64_t leaders) {
  if (leader != "parameter_server" || leaders <= 1 || servers <= leaders) return "";
  return std::to_string(servers) + " servers among " + std::to_string(leaders) +
         " node leaders: the leaders' parameter server has at most one per leader";
}

Hierarchical::Hierarchical(Comm& comm, const ReducerOptions& o) : Allreduce(comm) {
  check_leader(o.leader);
  const std::vector<int> nodes = node_layout(comm.size(), o, &comm);
  const std::vector<std::vector<int>> groups = groups_of(nodes);
  // A parameter server among the leaders with more servers than leaders is refused, on every rank alike, as the
  // flat one refuses more than its ranks (it ran with one per leader, and the record said the number asked for).
  if (const std::string e = leader_servers_problem(o.leader, o.servers, static_cast<int64_t>(groups.size())); !e.empty())
    throw BadInput("hierarchical: /reducer/servers (--servers): " + e);
  local_ = groups[size_t(nodes[size_t(comm.rank())])];
  const bool leads = local_[0] == comm.rank() && groups.size() > 1;
  if (o.leader == "mpi") {
    // MPI_Allreduce needs an MPI communicator of the leaders: split from the Comm's own, a call every rank makes
    // (the others get none), so every rank builds this reducer at the same point, as it does the others.
    MpiComm* mpi = &require_mpi(comm, "hierarchical: leader reducer 'mpi'");
    MPI_Comm split = MPI_COMM_NULL;
    if (MPI_Comm_split(mpi->handle(), leads ? 0 : MPI_UNDEFINED, comm.rank(), &split) != MPI_SUCCESS)
      throw RunFailed("hierarchical: MPI_Comm_split of the node leaders failed on rank " +
                      std::to_string(comm.rank()));
    if (split != MPI_COMM_NULL) {
      // MpiComm duplicates the split, which is freed at once, also when the duplicate fails.
      std::unique_ptr<MpiComm> leaders;
      try {
        leaders = std::make_unique<MpiComm>(split);
      } catch (...) {
        MPI_Comm_free(&split);
        throw;
      }
      MPI_Comm_free(&split);
      leaders->set_poll_sleep_us(mpi->poll_sleep_us());
      leaders_comm_ = std::move(leaders);
    }
  } else if (leads) {
    std::vector<int> leaders;
    for (const auto& g : groups) leaders.push_back(g[0]);
    leaders_comm_ = std::make_unique<SubComm>(comm, leaders);
  }
  if (leaders_comm_)
    leaders_algorithm_ = make_allreduce(o.leader, *leaders_comm_, leader_options(o, leaders_comm_->size()));
}

void Hierarchical::run(float* data, size_t count) {
  Comm& c = comm();
  if (count == 0) return;
  const size_t bytes = count * sizeof(float);
  const bool leader = local_[0] == c.rank();
  // Reduce within the node, in ascending rank order.
  if (leader) {
    float* scratch = local_.size() > 1 ? scratch_.get(count) : nullptr;
    for (size_t i = 1; i < local_.size(); ++i) {
      c.recv(local_[i], scratch, bytes, kTagHierarchical);
      sum_into(data, scratch, count);
    }
    if (leaders_algorithm_) leaders_algorithm_->run(data, count);
    for (size_t i = 1; i < local_.size(); ++i) c.send(local_[i], data, bytes, kTagHierarchical);
  } else {
    c.send(local_[0], data, bytes, kTagHierarchical);
    c.recv(local_[0], data, bytes, kTagHierarchical);
  }
}

std::vector<RankBytes> Hierarchical::traffic(int p, size_t bytes, const ReducerOptions& o) {
  // From run(): a rank other than its node's leader sends and receives one buffer; a leader receives and
  // sends one per other rank of its node, plus its own bytes in the leaders' algorithm (as rank j of L), which
  // for `mpi` move inside MPI_Allreduce, where no Comm counts them (none here either).
  check_leader(o.leader);
  const std::vector<std::vector<int>> groups = groups_of(node_layout(p, o, nullptr));
  std::vector<RankBytes> out(static_cast<size_t>(p));
  if (bytes == 0) return out;
  std::vector<RankBytes> among_leaders;
  const int L = static_cast<int>(groups.size());
  if (L > 1 && reducer_info(o.leader).traffic != nullptr)
    among_leaders = reducer_info(o.leader).traffic(L, bytes, leader_options(o, L));
  for (size_t k = 0; k < groups.size(); ++k) {
    const std::vector<int>& g = groups[k];
    const uint64_t within = (g.size() - 1) * uint64_t{bytes};
    out[size_t(g[0])] = {within, within};
    if (!among_leaders.empty()) out[size_t(g[0])].sent += among_leaders[k].sent, out[size_t(g[0])].received += among_leaders[k].received;
    for (size_t i = 1; i < g.size(); ++i) out[size_t(g[i])] = {bytes, bytes};
  }
  return out;
}

Hierarchical::CostParts Hierarchical::cost_parts(int p, double n, const ReducerOptions& o, double eager) {
  check_leader(o.leader);
  // g: the largest node's ranks, L: the nodes, busy_nodes: those of more than one rank. Counted, not laid out, for
  // ranks_per_node or one node (the cost model predicts up to millions of ranks); from the list for `nodes`.
  int L = 0;
  double g = 0, busy_nodes = 0;
  if (o.ranks_per_node < 0) throw BadInput("hierarchical: ranks_per_node must be >= 0, got " + std::to_string(o.ranks_per_node));
  if (o.ranks_per_node > 0 || o.nodes.empty()) {
    const int per = o.ranks_per_node > 0 ? std::min(o.ranks_per_node, p) : p;
    const int full = p / per, rest = p % per;
    L = full + (rest > 0);
    g = per;
    busy_nodes = (per > 1 ? full : 0) + (rest > 1);
  } else {
    const std::vector<std::vector<int>> groups = groups_of(node_layout(p, o, nullptr));
    L = static_cast<int>(groups.size());
    for (const auto& members : groups) {
      g = std::max(g, static_cast<double>(members.size()));
      busy_nodes += members.size() > 1;
    }
  }
  CostParts parts;
  CostTerms& t = parts.within;
  t.messages(2 * (g - 1), n, eager);
  t.beta = 2 * (g - 1) * n;
  t.gamma = (g - 1) * n;
  t.concurrency = 2 * busy_nodes;
  if (L > 1) parts.among = reducer_info(o.leader).cost(L, n, leader_options(o, L), eager);
  return parts;
}

CostTerms Hierarchical::cost(int p, double n, const ReducerOptions& o, double eager) {
  const CostParts parts = cost_parts(p, n, o, eager);
  const CostTerms &w = parts.within, &a = parts.among;
  CostTerms t;
  t.alpha = w.alpha + a.alpha;
  t.alpha_rndv = w.alpha_rndv + a.alpha_rndv;
  t.beta = w.beta + a.beta;
  t.gamma = w.gamma + a.gamma;
  // The concurrency of the two phases, weighted by the bytes each moves (as folded_concurrency does).
  t.concurrency = t.beta > 0 ? (w.concurrency * w.beta + a.concurrency * a.beta) / t.beta : 0;
  return t;
}

}  // namespace dtbench
