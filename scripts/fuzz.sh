#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, the `fuzz` preset: clang, AddressSanitizer, UndefinedBehaviorSanitizer)
# and runs each for N seconds from its committed seed corpus, printing executions, coverage and findings.
# Usage: scripts/fuzz.sh [--seconds N] [TARGET...]   (default: 1800 s each, every target; README, "Fuzzing");
# FUZZ_JOBS: how many targets run at once (default: the cores).
# Exit 1 when a target found a crash, sanitizer report, leak, timeout or out-of-memory input: its reproducer is
# left in BUILD/findings/TARGET/ (rerun it with BUILD/fuzz/fuzz_TARGET FILE); exit 2 for a bad argument or a
# failed build. What a run adds to the corpus is kept in BUILD/corpus/TARGET/, so later runs go on from it;
# fuzz/corpus/ is only read. BUILD is build/fuzz, or FUZZ_BUILD_DIR: another build folder configured with
# DTBENCH_FUZZ, such as the sanitizer job's build/sanitize (the `debug` preset), whose fuzz targets
# scripts/test.sh runs instead of building the `fuzz` preset as well.
set -euo pipefail
cd "$(dirname "$0")/.."

all=(config sweep_spec idx cifar run_record campaign_index model_fit)
# The longest input per target: a few times its largest seed.
declare -A max_len=([config]=8192 [sweep_spec]=8192 [idx]=16384 [cifar]=16384 [run_record]=16384
                    [campaign_index]=32768 [model_fit]=16384)
declare -A dict=([config]=1 [sweep_spec]=1 [run_record]=1 [campaign_index]=1 [model_fit]=1)

seconds=1800
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="${2:?--seconds needs a number}"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --seconds: expected a positive integer, got '$seconds'" >&2; exit 2; }
jobs=${FUZZ_JOBS:-$(nproc)}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: FUZZ_JOBS: expected a positive integer, got '$jobs'" >&2; exit 2; }
((${#targets[@]})) || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [[ -n "${max_len[$t]:-}" ]] || { echo "fuzz.sh: unknown target '$t'; targets: ${all[*]}" >&2; exit 2; }
done

build=${FUZZ_BUILD_DIR:-build/fuzz}
start=$SECONDS
if [ -n "${FUZZ_BUILD_DIR:-}" ]; then
  grep -Eiq '^DTBENCH_FUZZ:BOOL=(ON|1|TRUE|YES|Y)$' "$build/CMakeCache.txt" 2>/dev/null ||
    { echo "fuzz.sh: FUZZ_BUILD_DIR=$build: not a build configured with DTBENCH_FUZZ (fuzz or debug preset)" >&2
      exit 2; }
elif [ ! -f "$build/CMakeCache.txt" ]; then
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  cmake --preset fuzz "${launcher[@]}" >/dev/null
fi
mkdir -p "$build/logs"
if ! cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >"$build/logs/build.log" 2>&1; then
  tail -40 "$build/logs/build.log"
  echo "fuzz.sh: the build failed (log: $build/logs/build.log)" >&2
  exit 2
fi
echo "fuzz.sh: built ${#targets[@]} targets in $((SECONDS - start)) s; $seconds s each"

# The targets run $(nproc) at a time (FUZZ_JOBS overrides): libFuzzer uses one core, so each still has a core
# of its own for its --seconds, and the whole run takes ceil(targets / jobs) x --seconds. The reports follow in
# the targets' order once all are done.
run_target() {
  local t=$1 findings="$build/findings/$1" log="$build/logs/$1.log"
  local args=(-max_total_time="$seconds" -max_len="${max_len[$t]}" -rss_limit_mb=2048 -timeout=10
              -print_final_stats=1 -artifact_prefix="$findings/")
  [[ -n "${dict[$t]:-}" ]] && args+=(-dict=fuzz/json.dict)
  local rc=0
  # The first corpus folder receives what the run adds; the committed seeds are only read. `time` reports the
  # run's CPU seconds (user, system): its share of a loaded machine, which the wall-clock --seconds does not say.
  { TIMEFORMAT='%U %S'; time "$build/fuzz/fuzz_$t" "${args[@]}" "$build/corpus/$t" "fuzz/corpus/$t" >"$log" 2>&1; } \
    2>"$log.cpu" || rc=$?
  echo "$rc" >"$log.rc"
}
for t in "${targets[@]}"; do
  rm -rf "$build/findings/$t" "$build/logs/$t.log.rc"
  mkdir -p "$build/findings/$t" "$build/corpus/$t"
done
# A stopped script (CI's time limit, ^C) stops its fuzzers too.
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
running=0
for t in "${targets[@]}"; do
  if ((running >= jobs)); then wait -n || true; running=$((running - 1)); fi
  run_target "$t" &
  running=$((running + 1))
done
wait || true

found=0
for t in "${targets[@]}"; do
  findings="$build/findings/$t"
  log="$build/logs/$t.log"
  rc=$(cat "$log.rc" 2>/dev/null || echo "no exit status")
  cpu=$(awk '{ printf "%d", $1 + $2 }' "$log.cpu" 2>/dev/null || echo "?")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" 2>/dev/null | tail -1 || true)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" 2>/dev/null | tail -1 || true)
  corpus=$(ls "$build/corpus/$t" | wc -l)
  artifacts=$(ls "$findings")
  if [ "$rc" = 0 ] && [ -z "$artifacts" ]; then
    echo "fuzz $t: ${execs:-?} executions in $cpu s of CPU, ${cov:-cov: ?}, corpus $corpus inputs, no crash"
  else
    found=1
    echo "fuzz $t: ${execs:-?} executions in $cpu s of CPU, ${cov:-cov: ?}: FOUND (exit $rc) ${artifacts:-nothing saved}; log $log"
    grep -E '^==[0-9]+==ERROR|runtime error|SUMMARY|^==[0-9]+== ?ERROR: libFuzzer|terminate called|what\(\)' "$log" \
      2>/dev/null | head -5 | sed 's/^/    /' || true
    for a in $artifacts; do echo "    reproduce: $build/fuzz/fuzz_$t $findings/$a"; done
  fi
done
exit "$found"
