#!/usr/bin/env bash
# The sanitizer job (CI runs it after the test suite): the whole tree and the libFuzzer targets built with clang,
# AddressSanitizer (leak checking on) and UndefinedBehaviorSanitizer (the `debug` preset, -O1; one build for this
# job and for scripts/fuzz.sh, FUZZ_BUILD_DIR=build/sanitize), then under the sanitizers: every unit test
# (CTest label `unit`), the bad-input corpus (label `corpus`) and short MPI training runs (train.resume:
# 2 and 3 ranks preempted and resumed bitwise; train.resume_files: what --resume does with the MLLOG file, header,
# record, weights and ranks' folders beside a checkpoint; train.no_space: a checkpoint that cannot be written).
# Any sanitizer report fails the test that produced it. Usage: scripts/sanitize.sh [extra ctest arguments].
# SANITIZE_BUILD_DIR overrides the build folder (default build/sanitize: a Ninja build, so not the Makefiles
# folder build/debug that the preset used before).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SANITIZE_BUILD_DIR:-build/sanitize}
cmake --preset debug -B "$build" >/dev/null
cmake --build "$build" -j"$(nproc)"
source scripts/mpi-env.sh
supp=$PWD/scripts/sanitizers
# Leaks are checked. Open MPI's own process-lifetime allocations are suppressed by library (lsan.supp says
# which), never dtbench's; its components stay loaded at exit so that those leaks can be attributed to them,
# and MPI programs unwind slowly (fast unwinding stops at Open MPI's frames, which have no frame pointers).
export OMPI_MCA_mca_base_component_disable_dlclose=1
export ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The in-process reducer sweeps run every reducer on 1 to 16 thread ranks; under the sanitizers 1, 2, 3, 5 and 8
# ranks (one, a pair, odd counts whose segments and butterfly folds are uneven, a power of two) keep the coverage
# at a fraction of the time: the 504 sweep cases of 1 to 8 ranks took 229 of the 572 CPU seconds of this part.
# GpuFp32Cases.AreWellConditionedOnTheCpu runs the CPU models six times over (46 s here) to probe their
# conditioning, a numerical property: the model tests run the same code under the sanitizers. The corpus and the MPI runs
# start mpirun, whose leaks need the slow unwinder to be attributed. Both parts run; the first failure's code is
# the exit code. Each failing part's failed tests are added to $DTBENCH_TEST_FAILURES when scripts/test.sh sets it.
failures=${DTBENCH_TEST_FAILURES:-/dev/null}
status=0
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -L '^unit$' \
      -E 'ReducerSweep.*_([4679]|1[0-9])ranks$|^GpuFp32Cases\.AreWellConditionedOnTheCpu$' "$@" ||
  { status=$?; bash scripts/ctest-failures.sh "$build" >> "$failures" || true; }
ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0 \
  ctest --test-dir "$build" --output-on-failure -j"$(nproc)" \
        -R '^(hardening\..*|train\.(resume|resume_files|no_space)|reducers_mpi_3ranks)$' "$@" ||
  { rc=$?; [ "$status" != 0 ] || status=$rc; bash scripts/ctest-failures.sh "$build" >> "$failures" || true; }
exit "$status"
