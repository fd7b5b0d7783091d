#!/usr/bin/env bash
# Prints what the last ctest run in a build folder failed: each failed test's name, the end of its output and its
# result line, read from CTest's own logs (Testing/Temporary/LastTestsFailed.log and LastTest.log). scripts/test.sh
# gathers these after each failing ctest and prints them again at its end, because a CI log is often read from
# its tail, and the failing test's output may lie thousands of lines above it.
# Usage: scripts/ctest-failures.sh BUILD_DIR [LINES] (LINES of each test's output, 40 unless given). Call it only
# right after a ctest that failed: CTest leaves the failed list of an earlier run in place when none fail.
set -euo pipefail
dir=$1/Testing/Temporary
lines=${2:-40}
[[ "$lines" =~ ^[1-9][0-9]*$ ]] ||
  { echo "ctest-failures.sh: LINES must be a positive integer, got '$lines'" >&2; exit 2; }
[ -s "$dir/LastTest.log" ] || { echo "($1: no Testing/Temporary/LastTest.log to read)"; exit 0; }
[ -s "$dir/LastTestsFailed.log" ] || { echo "($1: ctest failed, but no test is listed as failed)"; exit 0; }
while IFS=: read -r _ name; do
  echo "---- $name ($1)"
  # The test's block in LastTest.log runs from "N/M Testing: name" to its "Test Passed/Failed" result line;
  # print its command, the end of its output and the result.
  # output: 0 before the test's output, 1 inside it (kept, its last LINES lines), 2 after it (its result lines),
  # so that an output line that looks like a result line ("*** ..." from Open MPI or glibc) is output.
  awk -v name="$name" -v keep="$lines" '
    $0 ~ /^[0-9]+\/[0-9]+ Testing: / { inside = ($3 == name); n = 0; output = 0; next }
    !inside { next }
    output == 0 && /^Command: / { print; next }
    output == 0 && /^Output:/ { output = 1; getline; next }
    output == 1 && /^<end of output>/ {
      for (i = (n > keep ? n - keep : 0); i < n; i++) print buf[i % keep]
      output = 2; next
    }
    output == 1 { buf[n % keep] = $0; n++; next }
    output == 2 && /^Test time =/ { print; next }
    output == 2 && /^Test (Passed|Failed|Not Run)|^\*\*\*|^Other|^Exit code/ { print; inside = 0; next }
  ' "$dir/LastTest.log"
done < "$dir/LastTestsFailed.log"
