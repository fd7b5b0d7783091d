#!/usr/bin/env bash
# Runs a command and checks its exit code and that its output (stdout + stderr) matches a regex.
# Usage: expect_exit.sh CODE REGEX COMMAND [ARGS...]
set -u
want=$1 regex=$2
shift 2
out=$("$@" 2>&1)
got=$?
if [ "$got" != "$want" ]; then
  printf 'expected exit %s, got %s from: %s\n%s\n' "$want" "$got" "$*" "$out"
  exit 1
fi
if ! grep -Eq -- "$regex" <<<"$out"; then
  printf 'output of "%s" does not match /%s/:\n%s\n' "$*" "$regex" "$out"
  exit 1
fi
printf 'ok: exit %s and /%s/\n' "$got" "$regex"
