#include "core/trace.hpp"

#include <chrono>
#include <mutex>
#include <vector>

namespace dtbench::trace {

namespace detail {
std::atomic<bool> recording{false};
}

namespace {

struct Event {
  std::string name;
  const char* category;
  int track;
  double start_us, end_us;
  Json args;
};

std::mutex events_m;
std::vector<Event> recorded;
std::chrono::steady_clock::time_point origin;
Json clock_description;

}  // namespace

void start(std::chrono::steady_clock::time_point at, Json clock) {
  std::lock_guard<std::mutex> lock(events_m);
  recorded.clear();
  recorded.reserve(1 << 16);
  origin = at;
  clock_description = std::move(clock);
  detail::recording.store(true, std::memory_order_relaxed);
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin).count();
}

void span(std::string name, const char* category, int track, double start_us, double end_us, Json args) {
  std::lock_guard<std::mutex> lock(events_m);
  recorded.push_back({std::move(name), category, track, start_us, end_us, std::move(args)});
}

Json events(int rank) {
  std::lock_guard<std::mutex> lock(events_m);
  Json out = Json::array();
  Json process = {{"name", "rank " + std::to_string(rank)}};
  if (!clock_description.is_null()) process["clock"] = clock_description;
  out.push_back({{"ph", "M"}, {"pid", rank}, {"name", "process_name"}, {"args", std::move(process)}});
  out.push_back({{"ph", "M"}, {"pid", rank}, {"name", "process_sort_index"}, {"args", {{"sort_index", rank}}}});
  for (auto [track, name] : {std::pair{kTrainingTrack, "training"}, std::pair{kCommunicationTrack, "communication"}})
    out.push_back({{"ph", "M"}, {"pid", rank}, {"tid", track}, {"name", "thread_name"}, {"args", {{"name", name}}}});
  for (const Event& e : recorded) {
    Json j = {{"ph", "X"}, {"name", e.name}, {"cat", e.category}, {"pid", rank}, {"tid", e.track},
              {"ts", e.start_us}, {"dur", e.end_us - e.start_us}};
    if (!e.args.is_null()) j["args"] = e.args;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace dtbench::trace
