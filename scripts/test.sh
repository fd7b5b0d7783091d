#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs the Debian packages, configures, builds and runs CTest on
# the release build (the `ci` preset: release as unity builds, compiled in about 60% of the time), then the
# sanitizer job (scripts/sanitize.sh: the whole tree and the fuzz targets, built once with clang under ASan and
# UBSan) and a bounded run of every fuzzer from that build (scripts/fuzz.sh). All three parts run even when one
# fails; the exit code is the first failure's. At the end, every failed test's name and the end of its output are
# printed again (scripts/ctest-failures.sh), so that the tail of a CI log says what failed.
# Usage: scripts/test.sh [extra ctest arguments for the release suite].
# BUILD_DIR overrides the release build folder (build/ci), SANITIZE_BUILD_DIR the sanitizer build's (build/sanitize).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${BUILD_DIR:-build/ci}
cmake --preset ci -B "$build" >/dev/null
cmake --build "$build" -j"$(nproc)"
source scripts/mpi-env.sh
export DTBENCH_TEST_FAILURES=$build/test-failures.txt
: > "$DTBENCH_TEST_FAILURES"
status=0
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@" ||
  { status=$?; bash scripts/ctest-failures.sh "$build" >> "$DTBENCH_TEST_FAILURES" || true; }
echo "== set-up, release build and suite took $SECONDS s"
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
