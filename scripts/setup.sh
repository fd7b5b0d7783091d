#!/usr/bin/env bash
# Installs every Debian package dtbench needs, skipping what is already present.
# Idempotent: a second run installs nothing. Usage: scripts/setup.sh [--minimal]
# (by default everything, Slurm with munge and PyTorch included; --minimal: the build-and-unit-test set only).
set -euo pipefail

core=(build-essential cmake ninja-build pkg-config git
      libdnnl-dev ocl-icd-opencl-dev
      libopenmpi-dev openmpi-bin
      nlohmann-json3-dev libbenchmark-dev libgtest-dev libgmock-dev libcli11-dev zlib1g-dev
      dataset-fashion-mnist
      python3 python3-numpy python3-matplotlib python3-jsonschema
      clang libclang-rt-14-dev libomp-dev  # clang, libFuzzer and clang's OpenMP: the sanitizer job and the fuzzers
      lld)                                 # the faster linker (CMakeLists.txt, DTBENCH_LLD)
extra=(slurm-wlm munge python3-torch)

want=("${core[@]}")
case "${1:-}" in
  --minimal) ;;
  "") want+=("${extra[@]}") ;;
  *) echo "setup.sh: unknown option '$1' (usage: scripts/setup.sh [--minimal])" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#want[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
