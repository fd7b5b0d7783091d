#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs the Debian packages, configures, builds and runs
# CTest. Usage: scripts/test.sh [extra ctest arguments]. BUILD_DIR overrides the build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${BUILD_DIR:-build/release}
cmake --preset release -B "$build" >/dev/null
cmake --build "$build" -j"$(nproc)"
source scripts/mpi-env.sh
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
