#!/usr/bin/env bash
# Sets up what scripts/gpu-pack.sh packed, on a GPU machine. Source it (it exports the environment):
#   source scripts/gpu-unpack.sh PACK.tar.xz DIR
# Unpacks into DIR, puts Open MPI's and PMIx's plugin folders at the Debian paths their libraries look in (moving
# aside any there: that machine's own Open MPI is not used), and exports PATH (DIR/bin first), LD_LIBRARY_PATH
# (DIR/lib less the base libraries the machine has, then the folders of the machine's CUDA runtime, cuDNN, NCCL
# and cuBLAS), PYTHONPATH (DIR/py) and OMPI_MCA_mca_base_component_show_load_errors=0 (the plugins for fabrics
# whose libraries were not packed stay quiet). The machine's own LD_LIBRARY_PATH stays in
# DTB_MACHINE_LD_LIBRARY_PATH, for programs that must not see the packed libraries or the system cuDNN first
# (PyTorch's wheels bring their own cuDNN, which an LD_LIBRARY_PATH entry would override). Prints where each CUDA library was found; a missing one is
# reported, not fatal (the tests say what failed). Returns 2 on a wrong call, 1 when the pack cannot be unpacked.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  echo "gpu-unpack.sh: source it (it sets the environment of the shell that runs the checks)" >&2
  exit 2
fi

gpu_unpack() {
  if [[ $# -ne 2 ]]; then
    echo "usage: source scripts/gpu-unpack.sh PACK.tar.xz DIR" >&2
    return 2
  fi
  local pack=$1 dir=$2
  local d so found cuda_path
  local -a cuda_dirs=()
  mkdir -p "$dir" && tar -C "$dir" -xJf "$pack" || return 1
  for d in openmpi pmix2; do
    if [[ -e /usr/lib/x86_64-linux-gnu/$d && ! -e /usr/lib/x86_64-linux-gnu/$d.machine ]]; then
      mv "/usr/lib/x86_64-linux-gnu/$d" "/usr/lib/x86_64-linux-gnu/$d.machine"
    fi
    rm -rf "/usr/lib/x86_64-linux-gnu/$d"
    cp -a "$dir/usr/lib/x86_64-linux-gnu/$d" /usr/lib/x86_64-linux-gnu/
  done
  # Base libraries the machine has stay the machine's (an image with CUDA and PyTorch is newer than the build's):
  # its Python and PyTorch need its libstdc++, and the binaries built here run with a newer one.
  for so in libstdc++.so.6 libgcc_s.so.1 libz.so.1 libgomp.so.1 libudev.so.1 libatomic.so.1 libuuid.so.1 \
    libnuma.so.1; do
    if ldconfig -p | grep -q "^[[:space:]]*$so "; then rm -f "$dir/lib/$so"; fi
  done
  for so in libcudart.so.13 libcudnn.so.9 libnccl.so.2 libcublas.so.13 libcublasLt.so.13; do
    found=$(find /usr/local/cuda/ /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu /opt -name "$so" 2>/dev/null |
      head -1 || true)
    echo "gpu-unpack: $so: ${found:-NOT FOUND}"
    if [[ -n $found ]]; then cuda_dirs+=("$(dirname "$found")"); fi
  done
  cuda_path=$(printf '%s\n' "${cuda_dirs[@]}" | awk 'NF && !seen[$0]++' | paste -sd: || true)
  export DTB_MACHINE_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
  export PATH="$dir/bin:$PATH"
  export LD_LIBRARY_PATH="$dir/lib${cuda_path:+:$cuda_path}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PYTHONPATH="$dir/py${PYTHONPATH:+:$PYTHONPATH}"
  export OMPI_MCA_mca_base_component_show_load_errors=0
}

gpu_unpack "$@"
