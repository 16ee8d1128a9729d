#!/bin/sh
# tests/gpu/run.sh — the interposer's GPU tier: run on a machine with an
# NVIDIA GPU (written for one H200, CUDA 13, PyTorch 2.11), never by
# `make test`. Builds libgpuslice.so and tests/gpu/paths.c (nvcc), then:
#
#   1. the cap on every allocation path with the real driver (paths caps);
#   2. PyTorch with its default allocator, expandable_segments:True and
#      backend:cudaMallocAsync: torch.OutOfMemoryError at the cap, the slice
#      in torch.cuda.mem_get_info();
#   3. CUDA graph capture and replay inside a slice;
#   4. two slices side by side: A fills its memory, B keeps computing;
#   5. figures: the real context memory; added ns per allocation and per
#      launch (with / without the library, same run); a PyTorch training
#      step with / without the library (target: within 2 %); the busy rate
#      of a 50 % compute share;
#   6. pause against the real driver (tests/gpu/pause.sh, 40 GiB).
#
# Everything runs under `timeout`, about 5 minutes in all (13 at most). Exit
# status: 0 when every check passed. On a machine without an NVIDIA GPU it
# says so and exits 0 as a TAP skip. Usage: tests/gpu/run.sh (from anywhere).
set -u
cd "$(dirname "$0")/../.."
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "1..0 # SKIP no NVIDIA GPU here (nvidia-smi finds none)"
    exit 0
fi
root=$(pwd)
out=build/gpu
mkdir -p "$out"
lib="$root/build/libgpuslice.so"
failed=0
step() { echo "== $*"; }
fail() { echo "not ok - $*"; failed=$((failed + 1)); }

step build
make -j"$(nproc)" build/libgpuslice.so >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null || NVCC=/usr/local/cuda/bin/nvcc
"$NVCC" -O2 -o "$out/paths" tests/gpu/paths.c -lcuda || exit 1

slice() { # slice NAME LIMIT command... : run inside a fresh slice
    name=$1 limit=$2
    shift 2
    env GPUPOOL_SLICE="gpu-tier-$name-$$" GPUPOOL_MEMORY_LIMIT="$limit" LD_PRELOAD="$lib" "$@"
}
cleanup() { rm -f /dev/shm/gpupool-slice-gpu-tier-*-$$; }
trap cleanup EXIT

step "1. allocation paths against the real driver"
GPUPOOL_CONTEXT_MEMORY=0 slice paths 1G timeout 60 "$out/paths" caps || fail "allocation paths"

step "2. PyTorch allocators at the cap"
for conf in "" "expandable_segments:True" "backend:cudaMallocAsync"; do
    slice "torch$(echo "$conf" | tr -cd 'a-z')" 4G timeout 90 python3 tests/gpu/torch_checks.py oom "$conf" ||
        fail "PyTorch allocator '${conf:-default}'"
done

step "3. CUDA graphs"
slice graph 4G timeout 60 python3 tests/gpu/torch_checks.py graph || fail "CUDA graphs"

step "4. two slices side by side"
slice a 8G timeout 60 python3 tests/gpu/torch_checks.py hog 25 &
hog=$!
sleep 8
slice b 8G timeout 60 python3 tests/gpu/torch_checks.py steady 15 || fail "slice B"
wait "$hog" || fail "slice A"

step "5. figures"
timeout 60 "$out/paths" ctxmem | sed 's/^/  /'
timeout 60 "$out/paths" bench >"$out/direct.txt" || fail "bench without the library"
slice bench 64G timeout 60 "$out/paths" bench >"$out/slice.txt" || fail "bench with the library"
awk 'FNR == NR { d[$1] = $2; next }
     { printf "  %-14s direct %8.1f ns  intercepted %8.1f ns  added %7.1f ns  ratio %.3f\n",
              $1, d[$1], $2, $2 - d[$1], $2 / d[$1] }' "$out/direct.txt" "$out/slice.txt"
direct=$(timeout 120 python3 tests/gpu/torch_checks.py train 200 | awk '/step_ms/ {print $2}')
sliced=$(slice train 100G timeout 120 python3 tests/gpu/torch_checks.py train 200 | awk '/step_ms/ {print $2}')
if [ -n "$direct" ] && [ -n "$sliced" ]; then
    awk -v d="$direct" -v s="$sliced" 'BEGIN {
        printf "  training step  direct %.3f ms  in a slice %.3f ms  ratio %.4f (target <= 1.02)\n", d, s, s / d
        exit !(s / d <= 1.02) }' || fail "training step overhead above 2%"
else
    fail "training step figures missing"
fi
full=$(slice full 100G timeout 60 python3 tests/gpu/torch_checks.py steady 10 | grep -o '[0-9]* matmuls')
half=$(GPUPOOL_COMPUTE_SHARE=50 slice half 100G timeout 60 python3 tests/gpu/torch_checks.py steady 10 |
    grep -o '[0-9]* matmuls')
echo "  compute share: unlimited $full, 50 % share $half"

step "6. pause against the real driver"
sh tests/gpu/pause.sh 40 || fail "pause"

if [ "$failed" = 0 ]; then echo "GPU tier: all passed"; else echo "GPU tier: $failed failed"; fi
[ "$failed" = 0 ]
