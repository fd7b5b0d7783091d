#include "reducers/registry.hpp"

#include <sstream>

#include "core/error.hpp"
#include "reducers/butterfly.hpp"
#include "reducers/halving_doubling.hpp"
#include "reducers/hierarchical.hpp"
#include "reducers/mpi_reducer.hpp"
#include "reducers/parameter_server.hpp"
#include "reducers/ring.hpp"
#include "reducers/shared_memory.hpp"
#include "reducers/tree.hpp"
#ifdef DTBENCH_HAVE_CUDA
#include "reducers/nccl_reducer.hpp"
#endif

namespace dtbench {
namespace {

std::unique_ptr<Allreduce> make_nccl([[maybe_unused]] Comm& comm, const ReducerOptions&) {
#ifdef DTBENCH_HAVE_CUDA
  return std::make_unique<NcclReducer>(comm);
#else
  throw BadInput("reducer 'nccl' needs a dtbench built with CUDA and NCCL; this build has no CUDA");
#endif
}

BadInput unknown_reducer(const std::string& name) {
  std::ostringstream valid;
  for (const auto& n : reducer_names()) valid << (valid.tellp() > 0 ? ", " : "") << n;
  return BadInput("unknown reducer '" + name + "'; valid names: " + valid.str());
}

}  // namespace

const std::vector<ReducerInfo>& reducer_registry() {
  static const std::vector<ReducerInfo> registry = {
      {"parameter_server", ReducerKind::kHost, allreduce_bus_factor, &ParameterServer::cost,
       &ParameterServer::traffic,
       [](Comm& c, const ReducerOptions& o) -> std::unique_ptr<Allreduce> {
         return std::make_unique<ParameterServer>(c, o.servers);
       }},
      {"tree", ReducerKind::kHost, allreduce_bus_factor, &Tree::cost, &Tree::traffic,
       [](Comm& c, const ReducerOptions&) -> std::unique_ptr<Allreduce> { return std::make_unique<Tree>(c); }},
      {"butterfly", ReducerKind::kHost, allreduce_bus_factor, &Butterfly::cost, &Butterfly::traffic,
       [](Comm& c, const ReducerOptions& o) -> std::unique_ptr<Allreduce> {
         return std::make_unique<Butterfly>(c, o);
       }},
      {"ring", ReducerKind::kHost, allreduce_bus_factor, &Ring::cost, &Ring::traffic,
       [](Comm& c, const ReducerOptions& o) -> std::unique_ptr<Allreduce> { return std::make_unique<Ring>(c, o); }},
      {"halving_doubling", ReducerKind::kHost, allreduce_bus_factor, &HalvingDoubling::cost,
       &HalvingDoubling::traffic,
       [](Comm& c, const ReducerOptions& o) -> std::unique_ptr<Allreduce> {
         return std::make_unique<HalvingDoubling>(c, o);
       }},
      {"hierarchical", ReducerKind::kHost, allreduce_bus_factor, &Hierarchical::cost, &Hierarchical::traffic,
       [](Comm& c, const ReducerOptions& o) -> std::unique_ptr<Allreduce> {
         return std::make_unique<Hierarchical>(c, o);
       }},
      // Ranks of one node only (its constructor refuses others); its bytes move through memory, not the Comm.
      {"shared_memory", ReducerKind::kHost, allreduce_bus_factor, &SharedMemory::cost, nullptr,
       [](Comm& c, const ReducerOptions& o) -> std::unique_ptr<Allreduce> {
         return std::make_unique<SharedMemory>(c, o);
       }},
      {"mpi", ReducerKind::kHost, allreduce_bus_factor, &MpiReducer::cost, nullptr,
       [](Comm& c, const ReducerOptions&) -> std::unique_ptr<Allreduce> { return std::make_unique<MpiReducer>(c); }},
      // Not in reducer_names(): "all" means the host reducers, which run on any machine.
      {"nccl", ReducerKind::kGpuOnly, allreduce_bus_factor, nullptr, nullptr, make_nccl},
      // The trainer's own loop (workloads/train), not an allreduce.
      {"async_parameter_server", ReducerKind::kAsynchronous, allreduce_bus_factor, nullptr, nullptr, nullptr},
  };
  return registry;
}

const ReducerInfo* find_reducer(const std::string& name) {
  for (const auto& r : reducer_registry())
    if (r.name == name) return &r;
  return nullptr;
}

const ReducerInfo& reducer_info(const std::string& name) {
  const ReducerInfo* r = find_reducer(name);
  if (r == nullptr) throw unknown_reducer(name);
  return *r;
}

const std::vector<std::string>& reducer_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& r : reducer_registry())
      if (r.kind == ReducerKind::kHost) out.push_back(r.name);
    return out;
  }();
  return names;
}

std::unique_ptr<Allreduce> make_allreduce(const std::string& name, Comm& comm, const ReducerOptions& options) {
  if (options.segment_bytes < sizeof(float) || options.small_segment_bytes < sizeof(float))
    throw BadInput("reducer segment sizes must be at least " + std::to_string(sizeof(float)) + " bytes, got " +
                   std::to_string(options.segment_bytes) + " and " + std::to_string(options.small_segment_bytes));
  const ReducerInfo* r = find_reducer(name);
  if (r == nullptr || r->make == nullptr) throw unknown_reducer(name);
  return r->make(comm, options);
}

}  // namespace dtbench
