#include "reducers/reducer.hpp"

#include <chrono>
#include <sstream>

#include "core/error.hpp"
#include "reducers/butterfly.hpp"
#include "reducers/halving_doubling.hpp"
#include "reducers/mpi_reducer.hpp"
#include "reducers/parameter_server.hpp"
#include "reducers/ring.hpp"
#include "reducers/tree.hpp"
#ifdef DTBENCH_HAVE_CUDA
#include "reducers/nccl_reducer.hpp"
#endif

namespace dtbench {

double allreduce_bus_factor(int nranks) { return nranks <= 1 ? 0.0 : 2.0 * (nranks - 1) / nranks; }

Reducer::Reducer(Comm& comm) : comm_(comm) {}

Reducer::~Reducer() { stop_comm_thread(); }

void Reducer::stop_comm_thread() {
  {
    std::unique_lock<std::mutex> lock(m_);
    // Queued buffers are in flight on the wire: finish them before the thread goes away.
    cv_.wait(lock, [&] { return finished_ == issued_; });
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Reducer::allreduce(float* data, size_t count) {
  wait();
  auto t0 = std::chrono::steady_clock::now();
  run(data, count);
  add_busy(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

void Reducer::add_busy(double seconds) {
  std::lock_guard<std::mutex> lock(busy_m_);
  busy_ += seconds;
}

double Reducer::busy_seconds() const {
  std::lock_guard<std::mutex> lock(busy_m_);
  return busy_;
}

uint64_t Reducer::start(float* data, size_t count) {
  std::lock_guard<std::mutex> lock(m_);
  if (!thread_.joinable()) thread_ = std::thread(&Reducer::comm_thread_main, this);
  queue_.push_back({data, count, ++issued_});
  cv_.notify_all();
  return issued_;
}

void Reducer::wait() {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return finished_ == issued_; });
  rethrow_pending_error(lock);
}

void Reducer::wait(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return finished_ >= ticket; });
  rethrow_pending_error(lock);
}

void Reducer::rethrow_pending_error(std::unique_lock<std::mutex>& lock) {
  if (!error_) return;
  std::exception_ptr e = error_;
  error_ = nullptr;
  lock.unlock();
  std::rethrow_exception(e);
}

void Reducer::comm_thread_main() {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and nothing left
    Request r = queue_.front();
    lock.unlock();
    std::exception_ptr failure;
    auto t0 = std::chrono::steady_clock::now();
    try {
      run(r.data, r.count);
    } catch (...) {
      failure = std::current_exception();
    }
    add_busy(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    lock.lock();
    queue_.pop_front();
    finished_ = r.ticket;
    if (failure) {
      // The peers are no longer in step with us: drop what is queued and report the first failure.
      if (!error_) error_ = failure;
      if (!queue_.empty()) finished_ = queue_.back().ticket;
      queue_.clear();
    }
    cv_.notify_all();
  }
}

const std::vector<std::string>& reducer_names() {
  static const std::vector<std::string> names = {"parameter_server", "tree", "butterfly", "ring",
                                                 "halving_doubling", "mpi"};
  return names;
}

std::unique_ptr<Reducer> make_reducer(const std::string& name, Comm& comm, const ReducerOptions& options) {
  if (options.segment_bytes < sizeof(float) || options.small_segment_bytes < sizeof(float))
    throw BadInput("reducer segment sizes must be at least " + std::to_string(sizeof(float)) + " bytes, got " +
                   std::to_string(options.segment_bytes) + " and " + std::to_string(options.small_segment_bytes));
  if (name == "parameter_server") return std::make_unique<ParameterServer>(comm, options.servers);
  if (name == "tree") return std::make_unique<Tree>(comm);
  if (name == "butterfly") return std::make_unique<Butterfly>(comm, options);
  if (name == "ring") return std::make_unique<Ring>(comm, options);
  if (name == "halving_doubling") return std::make_unique<HalvingDoubling>(comm, options);
  if (name == "mpi") return std::make_unique<MpiReducer>(comm);
  // NCCL is not in reducer_names(): "all" means the host reducers, which run on any machine.
  if (name == "nccl") {
#ifdef DTBENCH_HAVE_CUDA
    return std::make_unique<NcclReducer>(comm);
#else
    throw BadInput("reducer 'nccl' needs a dtbench built with CUDA and NCCL; this build has no CUDA");
#endif
  }
  std::ostringstream valid;
  for (const auto& n : reducer_names()) valid << (valid.tellp() > 0 ? ", " : "") << n;
  throw BadInput("unknown reducer '" + name + "'; valid names: " + valid.str());
}

}  // namespace dtbench
