#include "core/clock_offset.hpp"

#include <stdexcept>

namespace dtbench {

ClockOffset estimate_clock_offset(std::span<const ClockRound> rounds) {
  if (rounds.empty()) throw std::invalid_argument("estimate_clock_offset: no rounds");
  const ClockRound* best = nullptr;
  for (const ClockRound& r : rounds) {
    if (r.received_ns < r.sent_ns) throw std::invalid_argument("estimate_clock_offset: a round ends before it starts");
    if (best == nullptr || r.received_ns - r.sent_ns < best->received_ns - best->sent_ns) best = &r;
  }
  // Halves of int64 sums could overflow; the midpoint is taken as sent + rtt / 2.
  const double rtt = static_cast<double>(best->received_ns - best->sent_ns);
  return {static_cast<double>(best->remote_ns - best->sent_ns) - rtt / 2, rtt / 2};
}

}  // namespace dtbench
