// Cristian's algorithm (F. Cristian, "Probabilistic clock synchronization", Distributed Computing 3, 1989):
// the offset of a remote clock from this process's, estimated from round trips. In one round this process
// reads its clock (sent), asks the remote side for its clock's reading (remote) and reads its own clock again
// when the answer arrives (received). The remote reading was taken somewhere within [sent, received], so
//   offset = remote - (sent + received) / 2
// is off by at most rtt / 2 = (received - sent) / 2. Of several rounds the one with the shortest round trip
// bounds the error tightest: on a loaded host most rounds are stretched by a descheduled process, the fastest
// is not. The trace (`dtbench train --trace`) aligns the ranks on other hosts than rank 0's with it.
#pragma once

#include <cstdint>
#include <span>

namespace dtbench {

struct ClockRound {
  int64_t sent_ns = 0, remote_ns = 0, received_ns = 0;  // local, remote, local clock readings
};

struct ClockOffset {
  double offset_ns = 0;       // remote clock - local clock
  double uncertainty_ns = 0;  // the true offset is within +- this of offset_ns (half the shortest round trip)
};

// The estimate from the round with the shortest round trip. std::invalid_argument for no rounds or a round
// whose second local reading precedes its first (not a monotonic clock).
ClockOffset estimate_clock_offset(std::span<const ClockRound> rounds);

}  // namespace dtbench
