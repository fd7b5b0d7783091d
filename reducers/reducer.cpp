#include "reducers/reducer.hpp"

#include <chrono>

#include "core/trace.hpp"
#include "reducers/registry.hpp"

namespace dtbench {

Reducer::Reducer(std::unique_ptr<Allreduce> algorithm) : algorithm_(std::move(algorithm)) {}

Reducer::~Reducer() {
  {
    std::unique_lock<std::mutex> lock(m_);
    // Queued buffers are in flight on the wire: finish them before the thread goes away.
    cv_.wait(lock, [&] { return finished_ == issued_; });
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

double Reducer::bus_factor(int nranks) const { return reducer_info(name()).bus_factor(nranks); }

void Reducer::allreduce(float* data, size_t count) {
  wait();
  algorithm_->issued();
  auto t0 = std::chrono::steady_clock::now();
  trace::Span traced("allreduce (blocking)", "communication");
  algorithm_->run(data, count);
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
  algorithm_->issued();  // here, on the caller's thread, under the lock: in the order of the queue
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
    const double trace_start = trace::on() ? trace::now_us() : -1.0;
    try {
      algorithm_->run(r.data, r.count);
    } catch (...) {
      failure = std::current_exception();
    }
    add_busy(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (trace_start >= 0)
      trace::span("allreduce " + algorithm_->name(), "communication", trace::kCommunicationTrack, trace_start,
                  trace::now_us(), {{"ticket", r.ticket}, {"bytes", r.count * sizeof(float)}});
    lock.lock();
    queue_.pop_front();
    finished_ = r.ticket;
    if (failure) {
      // The peers are no longer in step with us: drop what is queued and report the first failure.
      if (!error_) error_ = failure;
      if (!queue_.empty()) finished_ = queue_.back().ticket;
      for (size_t i = 0; i < queue_.size(); ++i) algorithm_->dropped();
      queue_.clear();
    }
    cv_.notify_all();
  }
}

std::unique_ptr<Reducer> make_reducer(const std::string& name, Comm& comm, const ReducerOptions& options) {
  return std::make_unique<Reducer>(make_allreduce(name, comm, options));
}

}  // namespace dtbench
