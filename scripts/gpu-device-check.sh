#!/usr/bin/env bash
# The GPU checks of issue 15's second part, in one command for a machine with an NVIDIA GPU (minutes of device time,
# so everything runs in one go and each part's output goes to its own log):
#   1. every GPU test binary with DTBENCH_EXPECT_GPU=1 (a skip is a failure);
#   2. gpu_nccl_mpi_check on 1 and 2 ranks (2 ranks share the one GPU through NCCL only where NCCL allows it);
#   3. `dtbench train --set backend=gpu`: ResNet-20 on synthetic 28x28 images, 60 steps in fp32, bf16 and fp16
#      (the records, schema-complete like a CPU run's);
#   4. ResNet-50 v1.5 at 224x224 (synthetic images), batch 128 on one GPU, 40 steps in fp32 (no TF32: the backend
#      keeps fp32 exact to fp32 rounding), bf16 and fp16: images per second from the records;
#   with SOURCE_DIR, before 3 and 4: CTest's train.gpu (tests/train/train_checks.py gpu: Fashion-MNIST in three
#      precisions, NCCL on 1 rank, 2 ranks through the host-staged ring, 2 ranks x b against 1 rank x 2b), with the
#      mpirun on PATH and BIN_DIR's dtbench.
# Each part has a time limit, so that one that hangs leaves time for the rest. Prints a summary table last.
# Usage: scripts/gpu-device-check.sh BIN_DIR OUT_DIR [SOURCE_DIR]
#   BIN_DIR: dtbench and the gpu_* test binaries of a CUDA build (build/<preset>/apps, build/<preset>/tests/gpu,
#   or the bin/ of scripts/gpu-pack.sh's pack).
# Environment: STEPS50 (40), BATCH50 (128).
set -uo pipefail
bin=$1
out=$2
src=${3:-}
mkdir -p "$out/records"
export DTBENCH_EXPECT_GPU=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
summary=()
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/device.txt"

# packed PROGRAM LABEL: true when BIN_DIR has PROGRAM; else notes LABEL as NOT RUN (a pack may leave test
# programs out, gpu-pack.sh's GPU_TESTS: say so, never pass silently).
packed() {
  [[ -x $bin/$1 ]] && return 0
  summary+=("$2: NOT RUN (not in $bin)")
  return 1
}

for t in gpu_runtime_test gpu_layers_test gpu_model_test gpu_optim_test gpu_reducers_test; do
  packed "$t" "$t" || continue
  start=$SECONDS
  timeout 150 "$bin/$t" > "$out/$t.log" 2>&1
  rc=$?
  summary+=("$t: exit $rc, $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/$t.log" | tr '\n' ' ')($((SECONDS - start)) s)")
done

for k in 1 2; do
  packed gpu_nccl_mpi_check "gpu_nccl_mpi_check on $k rank(s)" || continue
  timeout 60 mpirun -np "$k" --oversubscribe --bind-to none "$bin/gpu_nccl_mpi_check" > "$out/nccl_mpi_$k.log" 2>&1
  summary+=("gpu_nccl_mpi_check on $k rank(s): exit $?")
done

if [[ -n $src ]]; then
  start=$SECONDS
  timeout 300 python3 "$src/tests/train/train_checks.py" gpu --dtbench "$bin/dtbench" \
    --schema "$src/results/schema/run-record.schema.json" --work "$out/train_checks" > "$out/train_gpu.log" 2>&1
  summary+=("train.gpu (train_checks.py gpu): exit $? ($((SECONDS - start)) s)")
fi

train() {  # name, then --set arguments
  local name=$1
  shift
  timeout 120 "$bin/dtbench" train --set name="$name" --set backend=gpu --set data.dataset=synthetic --set output.dir="$out/records" \
    "$@" > "$out/$name.log" 2>&1
  local rc=$?
  local rec="$out/records/$name.json"
  if [[ -f $rec ]]; then
    summary+=("$name: exit $rc, $(python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
c = r['curve']
loss = (f\"loss {c[0]['train_loss']:.3f} -> {c[-1]['train_loss']:.3f}\" if len(c) > 1 else
        f\"loss {c[0]['train_loss']:.3f} (one evaluation, at the end)\")
print(f\"status {r['status']}, {loss}, {r['throughput']['images_per_second']:.0f} images/s\")" "$rec")")
  else
    summary+=("$name: exit $rc, no record: $(tail -2 "$out/$name.log" | tr '\n' ' ')")
  fi
}

for p in fp32 bf16 fp16; do
  train "r20-$p" --set model.arch=resnet20 --set precision="$p" --set data.synthetic.channels=1 \
    --set data.synthetic.height=28 --set data.synthetic.width=28 --set data.synthetic.train_size=8192 \
    --set data.synthetic.test_size=1024 --set batch.global=128 --set duration.steps=60 --set eval.every_steps=30
done
for p in fp32 bf16 fp16; do
  train "r50-$p" --set model.arch=resnet50 --set precision="$p" --set data.synthetic.channels=3 \
    --set data.synthetic.height=224 --set data.synthetic.width=224 --set data.synthetic.classes=1000 \
    --set data.synthetic.train_size=$((2 * ${BATCH50:-128})) --set data.synthetic.test_size=128 \
    --set batch.global="${BATCH50:-128}" --set duration.steps="${STEPS50:-40}" --set eval.every_steps="${STEPS50:-40}"
done

echo
echo "== summary"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
