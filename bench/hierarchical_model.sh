#!/usr/bin/env bash
# The hierarchical reducer's cost formula against measured sweeps (BENCHMARKS.md, "The hierarchical reducer's
# cost formula"): `dtbench allreduce` of hierarchical and its two parts (parameter_server, which is what runs
# within a node, and the leaders' ring) on emulated nodes (--ranks-per-node), fitted on two layouts and checked
# on two it was not fitted on; and hierarchical priced from its parts' fits alone.
#   fit:      2 ranks on one node (one rank per core), 4 ranks as 2 nodes of 2
#   held out: 4 ranks on one node (reduce to one leader, as the single parameter server), 4 ranks as 4 nodes of
#             1 (the leaders' ring alone)
# The 4-rank runs oversubscribe a 2-core machine (OMPI_MCA_mpi_yield_when_idle=1), as the reducer sweep's do.
# Each layout runs ROUNDS times; the fit takes each size's median over the rounds (reducers/cost_model.hpp).
# It builds nothing: build the dtbench target first (cmake --build build/ci --target dtbench).
# Usage: bench/hierarchical_model.sh [BUILD_DIR] [OUT_DIR]   (defaults: build/ci, BUILD_DIR/hierarchical_model)
# Environment: ROUNDS (3), ITERS (20), WARMUP (5), MAXBYTES (4M), LEADER (ring).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/ci}
out=${2:-$build/hierarchical_model}
dtbench=$build/apps/dtbench
rounds=${ROUNDS:-3}
if [ ! -x "$dtbench" ]; then
  echo "hierarchical_model: $dtbench not found; build the dtbench target first" >&2
  exit 2
fi
mkdir -p "$out"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
sweep=(allreduce -b 4K -e "${MAXBYTES:-4M}" -f 2 -n "${ITERS:-20}" -w "${WARMUP:-5}" -c 1
       --reducer parameter_server,ring,hierarchical --leader "${LEADER:-ring}")
# name ranks ranks-per-node
layouts=("p2_one_node 2 0" "p4_nodes_of_2 4 2" "p4_one_node 4 4" "p4_nodes_of_1 4 1")
for r in $(seq 1 "$rounds"); do
  for l in "${layouts[@]}"; do
    read -r name np g <<<"$l"
    if [ "$np" -le 2 ]; then launch=(mpirun -np "$np" --bind-to core --map-by core)
    else launch=(env OMPI_MCA_mpi_yield_when_idle=1 mpirun -np "$np" --oversubscribe --bind-to none); fi
    echo "+ ${launch[*]} $dtbench ${sweep[*]} --ranks-per-node $g --json $out/${name}_r$r.json"
    "${launch[@]}" "$dtbench" "${sweep[@]}" --ranks-per-node "$g" --json "$out/${name}_r$r.json" >"$out/${name}_r$r.txt"
  done
done
fit=() held=()
for r in $(seq 1 "$rounds"); do
  fit+=(--fit "$out/p2_one_node_r$r.json" --fit "$out/p4_nodes_of_2_r$r.json")
  held+=(--holdout "$out/p4_one_node_r$r.json" --holdout "$out/p4_nodes_of_1_r$r.json")
done
echo "+ $dtbench model ${fit[*]} ${held[*]} --ranks 2,16,256 --ranks-per-node 8 --bytes 100M --json $out/model.json"
"$dtbench" model "${fit[@]}" "${held[@]}" --ranks 2,16,256 --ranks-per-node 8 --bytes 100M --json "$out/model.json" \
  | tee "$out/model.txt"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
# The held-out error of each layout alone.
for name in p4_one_node p4_nodes_of_1; do
  one=()
  for r in $(seq 1 "$rounds"); do one+=(--holdout "$out/${name}_r$r.json"); done
  echo "+ $dtbench model ${fit[*]} ${one[*]} --ranks 2"
  "$dtbench" model "${fit[@]}" "${one[@]}" --ranks 2 | grep -E "^# +reducer +alpha|^ +hierarchical +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ |from its parts" \
    | sed "s/^/$name: /" | tee -a "$out/model.txt"
done
