#!/bin/sh
# tests/gpu/pause.sh — pause against the real driver, for a machine with an
# NVIDIA GPU and a driver with the checkpoint API (CUDA 12.8 / r570 or later):
# a process holding GIB GiB (default 40) is locked and checkpointed, NVML
# shows the memory freed, another process allocates it, the first is
# restored and unlocked and checks its data; the times of each step are
# printed and kept in build/gpu/pause-times.txt (tests/gpu/pause-check.c).
# Never run by `make test`; tests/gpu/run.sh runs it. Without a GPU, or
# without nvcc, it says why and exits 0 as a TAP skip. It links against the
# CUDA toolkit's stub libcuda.so, so it builds where no driver is installed;
# at run time the driver's own libcuda.so.1 is loaded.
# Usage: tests/gpu/pause.sh [GIB]
set -u
cd "$(dirname "$0")/../.."
out=build/gpu
mkdir -p "$out"
gib=${1:-40}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "1..0 # SKIP no NVIDIA GPU here (nvidia-smi finds none)"
    exit 0
fi
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null || NVCC=/usr/local/cuda/bin/nvcc
if ! command -v "$NVCC" >/dev/null 2>&1; then
    echo "1..0 # SKIP no nvcc (the CUDA toolkit) to build tests/gpu/pause-check.c"
    exit 0
fi
cuda=$(dirname "$(dirname "$(command -v "$NVCC")")")
"$NVCC" -O2 -o "$out/pause-check" tests/gpu/pause-check.c -L"$cuda/lib64/stubs" -lcuda || exit 1
timeout 300 "$out/pause-check" "$gib" >"$out/pause-times.txt" 2>&1
rc=$?
cat "$out/pause-times.txt"
exit $rc
