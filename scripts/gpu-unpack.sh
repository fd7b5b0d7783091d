#!/usr/bin/env bash
# Sets up what scripts/gpu-pack.sh packed, on a GPU machine. Source it (it exports the environment):
#   source scripts/gpu-unpack.sh PACK.tar.xz DIR
# Unpacks into DIR, puts Open MPI's and PMIx's plugin folders at the Debian paths their libraries look in (moving
# aside any there: that machine's own Open MPI is not used), and exports PATH (DIR/bin first), LD_LIBRARY_PATH
# (DIR/lib less the base libraries the machine has, then the folders of the machine's CUDA runtime, cuDNN, NCCL
# and cuBLAS) and PYTHONPATH (DIR/py).
# Prints where each CUDA library was found; a missing one is reported, not fatal (the tests say what failed).
pack=$1
dir=$2
mkdir -p "$dir"
tar -C "$dir" -xJf "$pack" || return 1
for d in openmpi pmix2; do
  if [[ -e /usr/lib/x86_64-linux-gnu/$d && ! -e /usr/lib/x86_64-linux-gnu/$d.machine ]]; then
    mv "/usr/lib/x86_64-linux-gnu/$d" "/usr/lib/x86_64-linux-gnu/$d.machine"
  fi
  rm -rf "/usr/lib/x86_64-linux-gnu/$d"
  cp -a "$dir/usr/lib/x86_64-linux-gnu/$d" /usr/lib/x86_64-linux-gnu/
done
# Base libraries the machine has in a newer version stay the machine's: its Python and PyTorch need the newer
# libstdc++, and the older-built binaries here run with it.
for so in libstdc++.so.6 libgcc_s.so.1 libz.so.1 libgomp.so.1 libudev.so.1 libatomic.so.1 libuuid.so.1 libnuma.so.1; do
  if ldconfig -p | grep -q "^[[:space:]]*$so "; then rm -f "$dir/lib/$so"; fi
done
cuda_dirs=()
for so in libcudart.so.13 libcudnn.so.9 libnccl.so.2 libcublas.so.13 libcublasLt.so.13; do
  found=$(find /usr/local/cuda/ /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu /opt -name "$so" 2>/dev/null | head -1)
  echo "gpu-unpack: $so: ${found:-NOT FOUND}"
  [[ -n $found ]] && cuda_dirs+=("$(dirname "$found")")
done
cuda_path=$(printf '%s\n' "${cuda_dirs[@]}" | awk '!seen[$0]++' | paste -sd:)
export PATH="$dir/bin:$PATH"
export LD_LIBRARY_PATH="$dir/lib${cuda_path:+:$cuda_path}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$dir/py${PYTHONPATH:+:$PYTHONPATH}"
export OMPI_MCA_mca_base_component_show_load_errors=0
