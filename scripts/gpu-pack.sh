#!/usr/bin/env bash
# Packs a CUDA build's GPU binaries with what they need beyond the CUDA libraries, so that they run on a GPU
# machine that has CUDA, cuDNN and NCCL but none of this project's other dependencies (oneDNN, Open MPI with its
# plugins and PMIx, jsonschema for the record checks):
#   bin/   dtbench, the gpu_* test binaries, gpu_nccl_mpi_check, mpirun (Open MPI's orterun)
#   lib/   every shared library they load that is not glibc's or CUDA's, found with ldd
#   usr/   Open MPI's and PMIx's plugin folders at their Debian paths (the libraries look for them there)
#   py/    jsonschema with what it imports, attrs and pyrsistent (pure Python), for tests/train/train_checks.py
# and writes them as one xz-compressed tar (13 MB of 74 MB unpacked at 7e40f38, stripped; 12 MB of 60 MB with
# GPU_TESTS=none; oneDNN is most of it). The programs' symbol tables are stripped (their GPU code stays).
# scripts/gpu-unpack.sh sets them up on the GPU machine.
# Usage: scripts/gpu-pack.sh BUILD_DIR OUT.tar.xz
# Environment (a device call carries at most 64 MiB with the checkout and its .git, and a data set may need the room):
#   GPU_TESTS  the test programs to pack (names in BUILD_DIR/tests/gpu; default all of them)
#   LEAN=1     leave out OpenSHMEM (liboshmem and its plugins: nothing here uses it) and the base libraries that
#              gpu-unpack.sh drops anyway where the machine has them (libstdc++, libgcc_s, libgomp, libatomic,
#              libz): about 1 MB less; then the GPU machine must have them (an image with CUDA and PyTorch does).
set -euo pipefail
build=$1
out=$2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,lib,py,usr/lib/x86_64-linux-gnu}
cp "$build/apps/dtbench" "$stage/bin/"
for t in ${GPU_TESTS:-}; do
  if [[ $t != none && ! -x $build/tests/gpu/$t ]]; then echo "gpu-pack.sh: GPU_TESTS: no program $t in $build/tests/gpu" >&2; exit 2; fi
done
for t in "$build"/tests/gpu/gpu_*; do  # every GPU test program the build made (not its CTest files)
  if [[ -n ${GPU_TESTS:-} && " $GPU_TESTS " != *" $(basename "$t") "* ]]; then continue; fi
  if [[ -f $t && -x $t ]]; then cp "$t" "$stage/bin/"; fi
done
strip "$stage"/bin/*
cp /usr/bin/orterun "$stage/bin/mpirun"
cp -a /usr/lib/x86_64-linux-gnu/openmpi "$stage/usr/lib/x86_64-linux-gnu/"
rm -rf "$stage/usr/lib/x86_64-linux-gnu/openmpi/include"
cp -a /usr/lib/x86_64-linux-gnu/pmix2 "$stage/usr/lib/x86_64-linux-gnu/"
if [[ ${LEAN:-0} == 1 ]]; then
  rm -f "$stage"/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_{sshmem,scoll,memheap,atomic,spml}_*.so
fi
rm -rf "$stage/usr/lib/x86_64-linux-gnu/pmix2/include" "$stage/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.a"
# The libraries: ldd over the binaries and the plugins. Left out: glibc's own (the GPU machine's are newer), the
# CUDA libraries (the GPU machine's must match its driver) and the plugins' fabric libraries (UCX, libfabric,
# verbs, PSM: a plugin that cannot load them is skipped, and one machine needs none of them).
skip='^(libc|libm|libdl|librt|libpthread|libresolv|ld-linux-x86-64|linux-vdso'
skip+='|libcuda|libcudart|libcudnn|libnccl|libcublas|libcublasLt|libnvrtc'
skip+='|libucp|libucs|libuct|libucm|libfabric|libibverbs|librdmacm|libpsm_infinipath|libpsm2|libinfinipath|libefa'
skip+='|libnl-3|libnl-route-3'
if [[ ${LEAN:-0} == 1 ]]; then skip+='|liboshmem|libstdc\+\+|libgcc_s|libgomp|libatomic|libz'; fi
skip+=')\.so'
ldd "$stage"/bin/* "$stage"/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so \
  "$stage"/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so 2>/dev/null |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  while read -r so; do
    name=$(basename "$so")
    [[ $name =~ $skip ]] && continue
    cp -L "$so" "$stage/lib/$name"
  done
for m in jsonschema attr attrs pyrsistent; do cp -a "/usr/lib/python3/dist-packages/$m" "$stage/py/"; done
find "$stage/py" -name '*.so' -delete
find "$stage/py" -name __pycache__ -prune -exec rm -rf {} +
tar -C "$stage" -cf - . | xz -T2 -9e >"$out"
echo "$out: $(du -h "$out" | cut -f1) ($(du -sh "$stage" | cut -f1) unpacked, $(ls "$stage/lib" | wc -l) libraries)"
