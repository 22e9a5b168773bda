#!/usr/bin/env bash
# Rehearses tests/gpu/real_gpu_check.sh here, without a GPU: the fake libnvidia-ml in its
# one-H200 scenario stands in for the driver, and the job echoes its CUDA_VISIBLE_DEVICES instead
# of running nvidia-smi. Everything but the real driver is exercised, so the device minutes go
# to what needs the GPU. Usage: rehearse.sh BUILD_DIR FAKE_NVML_LIBRARY
set -u
build=${1:?usage: rehearse.sh BUILD_DIR FAKE_NVML_LIBRARY}
lib=${2:?usage: rehearse.sh BUILD_DIR FAKE_NVML_LIBRARY}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
GPUPOOL_BIN_DIR="$build/src" GPUPOOL_NVML_LIBRARY="$lib" GPUPOOL_FAKE_NVML_SCENARIO=one-h200 \
  GPUPOOL_CHECK_PROBE='echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"' GPUPOOL_CHECK_SECONDS=120 \
  "$(dirname "$0")/real_gpu_check.sh" "$out"
rc=$?
cat "$out/summary.txt"
[ $rc = 0 ] || { tail -n 20 "$out/agent.log" "$out/daemon.log" 2>/dev/null; exit 1; }
grep -q '^PASS$' "$out/summary.txt" || exit 1
grep -q 'GPU 0: NVIDIA H200 GPU-fake-nvml-h200-0 model=h200-141gb' "$out/summary.txt" || { echo "discovery not recorded"; exit 1; }
grep -q 'granted: GPU-fake-nvml-h200-0; the job saw CUDA_VISIBLE_DEVICES=GPU-fake-nvml-h200-0' "$out/summary.txt" || exit 1
echo "rehearsal ok"
