#include "reducers/thread_comm.hpp"

#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "reducers/thread_world.hpp"

namespace dtbench {

// ---- ThreadComm: forwards to the world with its own rank -------------------------------------------

int ThreadComm::size() const { return world_.size(); }

void ThreadComm::check_alive() const {
  if (world_.aborted()) world_.throw_aborted(rank_);
}

void ThreadComm::do_send(int dst, const void* buf, size_t bytes, int tag) {
  world_.check_rank(dst, "send to", rank_);
  ThreadWorld::Message msg{rank_, tag, buf, bytes};
  world_.post(dst, msg);
  world_.wait_sent(dst, msg, rank_);
}

void ThreadComm::do_recv(int src, void* buf, size_t bytes, int tag) {
  world_.check_rank(src, "receive from", rank_);
  world_.receive(rank_, src, buf, bytes, tag);
}

int ThreadComm::do_recv_any(void* buf, size_t bytes, int tag) {
  return world_.receive(rank_, ThreadWorld::kAnySource, buf, bytes, tag);
}

void ThreadComm::do_sendrecv(int dst, const void* sendbuf, size_t sendbytes, int src, void* recvbuf,
                             size_t recvbytes, int tag) {
  world_.check_rank(dst, "send to", rank_);
  world_.check_rank(src, "receive from", rank_);
  ThreadWorld::Message msg{rank_, tag, sendbuf, sendbytes};
  world_.post(dst, msg);
  try {
    world_.receive(rank_, src, recvbuf, recvbytes, tag);
  } catch (...) {
    // Our descriptor must not outlive this frame: withdraw it or wait for its copy to finish.
    try {
      world_.wait_sent(dst, msg, rank_);
    } catch (...) {
    }
    throw;
  }
  world_.wait_sent(dst, msg, rank_);
}

std::unique_ptr<SendRequest::Pending> ThreadComm::do_isend(int dst, const void* buf, size_t bytes, int tag) {
  world_.check_rank(dst, "send to", rank_);
  // The descriptor lives in the request (the receiver holds a pointer to it until it has copied).
  struct Posted : SendRequest::Pending {
    Posted(ThreadWorld& w, int d, int me, ThreadWorld::Message m) : world(w), dst(d), rank(me), msg(m) {}
    void wait() override {
      waited = true;
      world.wait_sent(dst, msg, rank);
    }
    ~Posted() override {
      if (!waited) world.withdraw(dst, msg);
    }
    ThreadWorld& world;
    int dst, rank;
    ThreadWorld::Message msg;
    bool waited = false;
  };
  auto p = std::make_unique<Posted>(world_, dst, rank_, ThreadWorld::Message{rank_, tag, buf, bytes});
  world_.post(dst, p->msg);
  return p;
}

void ThreadComm::barrier() { world_.barrier(rank_); }

void ThreadComm::abort(const std::string& reason) {
  world_.abort("rank " + std::to_string(rank_) + ": " + reason);
  world_.throw_aborted(rank_);
}

// ---- run_ranks ---------------------------------------------------------------------------------------

void run_ranks(int nranks, const std::function<void(Comm&)>& fn) {
  ThreadWorld world(nranks);
  std::mutex first_m;
  // The cause: a failing rank records its exception before it aborts the world, so the first one
  // recorded is the cause, not one of the aborts it triggered.
  std::exception_ptr first;
  auto body = [&](int r) {
    try {
      fn(world.comm(r));
    } catch (const std::exception& e) {
      {
        std::lock_guard<std::mutex> lock(first_m);
        if (!first) first = std::current_exception();
      }
      world.abort("rank " + std::to_string(r) + " failed: " + e.what());
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(first_m);
        if (!first) first = std::current_exception();
      }
      world.abort("rank " + std::to_string(r) + " failed");
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(nranks));
  try {
    for (int r = 1; r < nranks; ++r) threads.emplace_back(body, r);
  } catch (const std::exception& e) {  // std::system_error: out of threads, or of memory for their stacks
    // The ranks started so far wait for the others: stop them, then join them (a joinable std::thread
    // destroyed would std::terminate).
    const std::string why = "could not start the thread of rank " + std::to_string(threads.size() + 1) + " of " +
                            std::to_string(nranks) + " (" + e.what() + ")";
    world.abort(why);
    for (auto& t : threads) t.join();
    throw RunFailed("thread transport: " + why + "; run fewer ranks");
  }
  body(0);  // rank 0 on the calling thread
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace dtbench
