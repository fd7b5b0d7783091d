#include "reducers/thread_world.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"

namespace dtbench {

ThreadWorld::ThreadWorld(int nranks) {
  if (nranks < 1) throw BadInput("thread transport: rank count must be >= 1, got " + std::to_string(nranks));
  for (int r = 0; r < nranks; ++r) {
    comms_.push_back(std::make_unique<ThreadComm>(*this, r));
    boxes_.push_back(std::make_unique<Mailbox>());
  }
}

void ThreadWorld::check_rank(int r, const char* what, int me) const {
  if (r < 0 || r >= size())
    throw RunFailed("thread transport: rank " + std::to_string(me) + " tried to " + what + " rank " +
                    std::to_string(r) + " of " + std::to_string(size()));
}

bool ThreadWorld::aborted() const {
  std::lock_guard<std::mutex> lock(state_m_);
  return aborted_;
}

void ThreadWorld::throw_aborted(int me) const {
  std::lock_guard<std::mutex> lock(state_m_);
  throw RunFailed("thread transport: rank " + std::to_string(me) + " stopped because the run was aborted (" +
                  reason_ + ")");
}

void ThreadWorld::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(state_m_);
    if (!aborted_) {
      aborted_ = true;
      reason_ = reason;
    }
  }
  barrier_cv_.notify_all();
  for (auto& box : boxes_) {
    std::lock_guard<std::mutex> lock(box->m);
    box->cv.notify_all();
  }
}

void ThreadWorld::post(int dst, Message& msg) {
  Mailbox& box = *boxes_[static_cast<size_t>(dst)];
  std::lock_guard<std::mutex> lock(box.m);
  box.posted.push_back(&msg);
  box.cv.notify_all();
}

void ThreadWorld::wait_sent(int dst, Message& msg, int me) {
  Mailbox& box = *boxes_[static_cast<size_t>(dst)];
  std::unique_lock<std::mutex> lock(box.m);
  box.cv.wait(lock, [&] { return msg.done || (!msg.taken && aborted()); });
  if (!msg.done) {
    // Aborted before any receiver touched it: withdraw the descriptor, it points into our frame.
    box.posted.erase(std::find(box.posted.begin(), box.posted.end(), &msg));
    lock.unlock();
    throw_aborted(me);
  }
  if (msg.size_mismatch)
    throw RunFailed("thread transport: rank " + std::to_string(me) + " sent " + std::to_string(msg.bytes) +
                    " bytes (tag " + std::to_string(msg.tag) + ") to rank " + std::to_string(dst) +
                    ", which expected a different count");
}

void ThreadWorld::withdraw(int dst, Message& msg) noexcept {
  Mailbox& box = *boxes_[static_cast<size_t>(dst)];
  std::unique_lock<std::mutex> lock(box.m);
  if (!msg.taken) {
    const auto at = std::find(box.posted.begin(), box.posted.end(), &msg);
    if (at != box.posted.end()) box.posted.erase(at);
    return;
  }
  box.cv.wait(lock, [&] { return msg.done; });
}

int ThreadWorld::receive(int me, int src, void* buf, size_t bytes, int tag) {
  Mailbox& box = *boxes_[static_cast<size_t>(me)];
  Message* msg = nullptr;
  {
    std::unique_lock<std::mutex> lock(box.m);
    auto match = [&] {
      return std::find_if(box.posted.begin(), box.posted.end(),
                          [&](const Message* m) {
                            return (src == kAnySource || m->src == src) && m->tag == tag && !m->taken;
                          });
    };
    box.cv.wait(lock, [&] { return match() != box.posted.end() || aborted(); });
    auto it = match();
    if (it == box.posted.end()) {
      lock.unlock();
      throw_aborted(me);
    }
    msg = *it;
    box.posted.erase(it);
    msg->taken = true;
  }
  // Copy outside the lock so other senders can post meanwhile. Once done is set the sender may return and its
  // descriptor be gone: what is needed after is read now.
  bool mismatch = msg->bytes != bytes;
  const size_t sent = msg->bytes;
  const int from = msg->src;
  if (!mismatch && bytes > 0) std::memcpy(buf, msg->data, bytes);
  {
    std::lock_guard<std::mutex> lock(box.m);
    msg->size_mismatch = mismatch;
    msg->done = true;
    box.cv.notify_all();
  }
  if (mismatch)
    throw RunFailed("thread transport: rank " + std::to_string(me) + " expected " + std::to_string(bytes) +
                    " bytes from rank " + std::to_string(from) + " (tag " + std::to_string(tag) + "), got " +
                    std::to_string(sent));
  return from;
}

void ThreadWorld::barrier(int me) {
  std::unique_lock<std::mutex> lock(state_m_);
  if (aborted_) {
    lock.unlock();
    throw_aborted(me);
  }
  unsigned long gen = barrier_generation_;
  if (++barrier_waiting_ == size()) {
    barrier_waiting_ = 0;
    ++barrier_generation_;
    barrier_cv_.notify_all();
    return;
  }
  barrier_cv_.wait(lock, [&] { return barrier_generation_ != gen || aborted_; });
  if (barrier_generation_ == gen) {
    lock.unlock();
    throw_aborted(me);
  }
}

}  // namespace dtbench
