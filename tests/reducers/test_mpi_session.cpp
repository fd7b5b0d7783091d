// What a process learns about its job from the launcher's environment, before MPI starts (reducers/mpi_session.hpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reducers/mpi_session.hpp"

namespace dtbench {
namespace {

// Every variable launched_ranks() and alone_in_job() read, cleared for a test and restored after it (ctest may run
// the test under mpirun's or srun's environment).
class LauncherEnv : public ::testing::Test {
 protected:
  static constexpr const char* kVars[] = {"OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS", "PMI_SIZE",
                                          "MV2_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                          "MV2_COMM_WORLD_RANK", "MPI_LOCALNRANKS", "ALPS_APP_PE"};
  void SetUp() override {
    for (const char* v : kVars) {
      const char* was = std::getenv(v);
      saved_.emplace_back(v, was ? std::optional<std::string>(was) : std::nullopt);
      ::unsetenv(v);
    }
  }
  void TearDown() override {
    for (const auto& [v, was] : saved_)
      if (was) ::setenv(v, was->c_str(), 1);
      else ::unsetenv(v);
  }
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

TEST_F(LauncherEnv, NoLauncherIsAJobOfOne) {
  EXPECT_EQ(launched_ranks(), 1);
  EXPECT_TRUE(alone_in_job());
}

TEST_F(LauncherEnv, ALaunchersSizeDecides) {
  for (const char* size : {"OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"}) {
    ::setenv(size, "1", 1);
    EXPECT_TRUE(alone_in_job()) << size << "=1";
    ::setenv("PMIX_RANK", "0", 1);  // mpirun -np 1 and srun -n 1 set ranks too: the size says one
    EXPECT_TRUE(alone_in_job()) << size << "=1 with PMIX_RANK";
    ::unsetenv("PMIX_RANK");
    for (const char* other : {"3", "0", "x"}) {  // a size that does not read as one is not taken for one
      ::setenv(size, other, 1);
      EXPECT_FALSE(alone_in_job()) << size << "=" << other;
    }
    ::setenv(size, "3", 1);
    EXPECT_EQ(launched_ranks(), 3) << size;
    ::unsetenv(size);
  }
  ::setenv("PMI_SIZE", "3", 1);
  EXPECT_EQ(launched_ranks(), 3);
}

// Hydra's ranks on one node of a Slurm allocation (MPICH's mpiexec starts its proxy there with srun): Slurm's size is 1,
// PMI's the job's.
TEST_F(LauncherEnv, NestedLaunchersMustAllSayOne) {
  ::setenv("SLURM_STEP_NUM_TASKS", "1", 1);
  ::setenv("PMI_SIZE", "4", 1);
  EXPECT_FALSE(alone_in_job());
  EXPECT_EQ(launched_ranks(), 4);
  ::setenv("PMI_SIZE", "1", 1);
  EXPECT_TRUE(alone_in_job());
  ::setenv("ALPS_APP_PE", "0", 1);  // and a Cray aprun rank, whose size no variable gives
  EXPECT_FALSE(alone_in_job());
}

TEST_F(LauncherEnv, ARankOfALauncherWithoutAKnownSizeIsNotTakenForAJobOfOne) {
  for (const char* rank : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK", "MPI_LOCALNRANKS",
                           "ALPS_APP_PE"}) {
    ::setenv(rank, "0", 1);
    EXPECT_EQ(launched_ranks(), 1) << rank;
    EXPECT_FALSE(alone_in_job()) << rank;
    ::unsetenv(rank);
  }
}

}  // namespace
}  // namespace dtbench
