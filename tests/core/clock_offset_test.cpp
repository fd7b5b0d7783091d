// Cristian's estimate (core/clock_offset.hpp) against rounds built from a known offset and known one-way delays:
// the estimate is offset + (outbound - inbound) / 2 for the round with the shortest round trip, exactly (every
// reading is a whole number of nanoseconds and the halves are exact in a double below 2^53).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/clock_offset.hpp"

namespace {

using dtbench::ClockRound;

// A round starting at local time `sent` whose request takes `out` ns to reach a remote clock `offset` ns ahead,
// and whose answer takes `back` ns to return.
ClockRound round_trip(int64_t sent, int64_t offset, int64_t out, int64_t back) {
  return {sent, sent + out + offset, sent + out + back};
}

}  // namespace

TEST(ClockOffset, TheShortestRoundTripGivesTheEstimateAndItsBound) {
  const int64_t offset = -3'600'000'000'123;  // the remote host booted an hour later
  std::vector<ClockRound> rounds = {
      round_trip(1'000'000, offset, 40'000, 900'000),    // a descheduled answer: off by 430 us
      round_trip(2'000'000, offset, 7'000, 5'000),       // the fastest: 12 us, off by 1 us
      round_trip(3'000'000, offset, 300'000, 8'000),     // a late request
      round_trip(4'000'000, offset, 9'000, 6'000)};      // 15 us
  const dtbench::ClockOffset est = dtbench::estimate_clock_offset(rounds);
  EXPECT_EQ(est.offset_ns, static_cast<double>(offset) + (7'000 - 5'000) / 2.0);
  EXPECT_EQ(est.uncertainty_ns, 6'000.0);
  EXPECT_LE(std::abs(est.offset_ns - static_cast<double>(offset)), est.uncertainty_ns);
  // Readings a hundred days after boot (8.6e15 ns): no overflow, the same estimate.
  for (ClockRound& r : rounds) {
    r.sent_ns += 8'640'000'000'000'000;
    r.remote_ns += 8'640'000'000'000'000;
    r.received_ns += 8'640'000'000'000'000;
  }
  EXPECT_EQ(dtbench::estimate_clock_offset(rounds).offset_ns, static_cast<double>(offset) + 1'000.0);
}

TEST(ClockOffset, SymmetricDelaysGiveTheOffsetExactly) {
  const ClockRound r = round_trip(500, 42'000, 3'000, 3'000);
  const dtbench::ClockOffset est = dtbench::estimate_clock_offset({&r, 1});
  EXPECT_EQ(est.offset_ns, 42'000.0);
  EXPECT_EQ(est.uncertainty_ns, 3'000.0);
}

TEST(ClockOffset, NoRoundsOrABackwardClockIsRefused) {
  EXPECT_THROW(dtbench::estimate_clock_offset({}), std::invalid_argument);
  const ClockRound backward{1'000, 5'000, 999};
  EXPECT_THROW(dtbench::estimate_clock_offset({&backward, 1}), std::invalid_argument);
}
