#!/usr/bin/env bash
# expect.sh RC PATTERN -- COMMAND...: runs COMMAND, passes when it exits with RC and its stderr+stdout
# contains PATTERN (a fixed string). Used by CTest to check the CLI's exit codes and messages.
set -u
want_rc=$1 pattern=$2
shift 3
out=$("$@" 2>&1)
rc=$?
if [ "$rc" != "$want_rc" ]; then
  echo "expected exit $want_rc, got $rc from: $*"; echo "$out"; exit 1
fi
if ! grep -qF -- "$pattern" <<<"$out"; then
  echo "output of '$*' lacks: $pattern"; echo "$out"; exit 1
fi
echo "ok: exit $rc, '$pattern'"
