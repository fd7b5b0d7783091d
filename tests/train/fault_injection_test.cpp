// --inject-fault's forms: each is taken whole, with a rank or shard >= 0 and a step (or milliseconds) >= 0;
// anything else is BadInput naming the forms, before any work.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "workloads/train/fault_injection.hpp"

namespace dtbench {
namespace {

TEST(FaultInjection, TakesEachFormWhole) {
  for (const char* ok : {"", "sigusr1@3", "kill@1:5", "nan-grad@0:2", "slow-setup@1:3000", "slow-setup@0:0"})
    EXPECT_NO_THROW(FaultInjection{ok}) << ok;
  const FaultInjection nan("nan-grad@1:2");
  EXPECT_TRUE(nan.poisons_gradient(2, 1));
  EXPECT_FALSE(nan.poisons_gradient(2, 0));
  EXPECT_FALSE(nan.poisons_gradient(1, 1));
}

TEST(FaultInjection, RefusesTrailingTextNegativeRanksAndUnknownForms) {
  for (const char* bad : {"slow-setup@1:3000ms", "kill@1:5 ", "sigusr1@", "sigusr1@3x", "kill@-1:5", "nan-grad@-2:1",
                          "slow-setup@1:-5", "slow-setup@1", "usr1@3", "kill@1;5"}) {
    try {
      FaultInjection f{bad};
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const BadInput& e) {
      EXPECT_NE(std::string(e.what()).find("slow-setup@RANK:MS"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

// What would inject nothing is refused (exit 2): a step past the run's end, a rank it does not have, and a stop signal
// at the last step or the one before (the ranks stop at the end of the step after it, and the last step finishes).
TEST(FaultInjection, WhatWouldInjectNothingIsRefused) {
  EXPECT_NO_THROW(FaultInjection("sigusr1@2").check(2, 1, 4));  // stops at the end of step 3 of 4
  EXPECT_THROW(FaultInjection("sigusr1@3").check(2, 1, 4), BadInput);
  EXPECT_THROW(FaultInjection("sigusr1@4").check(2, 1, 4), BadInput);
  EXPECT_THROW(FaultInjection("sigusr1@5").check(2, 1, 4), BadInput);
  EXPECT_NO_THROW(FaultInjection("sigusr1@0").check(2, 1, 4));  // documented: a STEP of 0 injects nothing
  // Asynchronous workers stop before their next step: a signal after step 3 of 4 stops them.
  EXPECT_NO_THROW(FaultInjection("sigusr1@3").check(2, 2, 4, true));
  EXPECT_THROW(FaultInjection("sigusr1@4").check(2, 2, 4, true), BadInput);
  EXPECT_NO_THROW(FaultInjection("kill@1:4").check(2, 1, 4));
  EXPECT_THROW(FaultInjection("kill@2:4").check(2, 1, 4), BadInput);
  EXPECT_THROW(FaultInjection("nan-grad@1:2").check(2, 1, 4), BadInput);
}

}  // namespace
}  // namespace dtbench
