#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs the Debian packages, configures, builds and runs CTest on
# the release build (the `ci` preset: release as unity builds, compiled in about 60% of the time), then the
# sanitizer job (scripts/sanitize.sh: the whole tree and the fuzz targets, built once with clang under ASan and
# UBSan) and a bounded run of every fuzzer from that build (scripts/fuzz.sh). All three parts run even when one
# fails; the exit code is the first failure's. At the end, every failed test's name and the end of its output are
# printed again (scripts/ctest-failures.sh), so that the tail of a CI log says what failed.
# The sanitizer job's build runs beside the release suite as a SCHED_IDLE process (chrt --idle; nice 19 where
# that is refused): it gets only the CPU time the suite leaves, which was 42% of the 2 cores (the suite's mpiruns,
# Slurm jobs and watchdog tests wait much of the time), and the suite's own processes preempt it at once. Its
# output is printed after the suite; scripts/sanitize.sh then finds it built.
# Usage: scripts/test.sh [extra ctest arguments for the release suite].
# BUILD_DIR overrides the release build folder (build/ci), SANITIZE_BUILD_DIR the sanitizer build's (build/sanitize).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${BUILD_DIR:-build/ci}
cmake --preset ci -B "$build" >/dev/null
cmake --build "$build" -j"$(nproc)"
sanitize_build=${SANITIZE_BUILD_DIR:-build/sanitize}
sanitize_log=$build/sanitize-build.log
idle=(chrt --idle 0)
"${idle[@]}" true 2>/dev/null || idle=(nice -n 19)
( start=$SECONDS; rc=0
  { cmake --preset debug -B "$sanitize_build" >/dev/null && "${idle[@]}" cmake --build "$sanitize_build" -j"$(nproc)"; } ||
    rc=$?
  echo "== the sanitizer build beside the suite ended after $((SECONDS - start)) s with exit $rc" ) > "$sanitize_log" 2>&1 &
sanitize_build_pid=$!
source scripts/mpi-env.sh
export DTBENCH_TEST_FAILURES=$build/test-failures.txt
: > "$DTBENCH_TEST_FAILURES"
status=0
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@" ||
  { status=$?; bash scripts/ctest-failures.sh "$build" >> "$DTBENCH_TEST_FAILURES" || true; }
echo "== set-up, release build and suite took $SECONDS s"
echo "== the sanitizer build (started beside the suite, $sanitize_build)"
wait "$sanitize_build_pid" || true  # its failure shows again below, when scripts/sanitize.sh builds
cat "$sanitize_log"
echo "== the sanitizer job (scripts/sanitize.sh)"
start=$SECONDS
bash scripts/sanitize.sh || { rc=$?; [ "$status" != 0 ] || status=$rc; }
echo "== the sanitizer job took $((SECONDS - start)) s"
echo "== the fuzzers, 8 s each (scripts/fuzz.sh)"
start=$SECONDS
FUZZ_BUILD_DIR=${SANITIZE_BUILD_DIR:-build/sanitize} bash scripts/fuzz.sh --seconds 8 || { rc=$?; [ "$status" != 0 ] || status=$rc; }
echo "== the fuzzers took $((SECONDS - start)) s; the whole command $SECONDS s"
if [ -s "$DTBENCH_TEST_FAILURES" ]; then
  echo "== what failed (the same as above, gathered here)"
  cat "$DTBENCH_TEST_FAILURES"
fi
exit "$status"
