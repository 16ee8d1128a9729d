#!/bin/sh
# bench/slurm-throughput.sh — sustained launches on a real Slurm cluster
# started on this host (tests/slurm/cluster.sh: 4 nodes of 4 GPUs): N
# one-GPU jobs of `true` through gpupool (gpupoold on the slurm executor),
# from the first submit to the last success, against the same N as bare
# `sbatch --gres=gpu:1 --wrap true`, from the first submit to the last end,
# on the same cluster in the same run. The two alternate for R rounds; the
# medians of each and their ratio are printed last.
# Usage: bench/slurm-throughput.sh [BUILD_DIR]
#        (GP_BENCH_N: jobs per round, default 1000; GP_BENCH_ROUNDS: 3)
set -u
B=${1:-build}
N=${GP_BENCH_N:-1000}
R=${GP_BENCH_ROUNDS:-3}
POOL_NAME=slurm-tput . bench/slurm-pool.sh
"$B/gpupool" queue create T --deserved 16 >/dev/null &&
    "$B/gpupool" queue create t1 --parent T --deserved 16 >/dev/null || exit 1

now_ms() { echo $(($(date +%s%N) / 1000000)); }
count() {
    curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" \
        "$GPUPOOL_SERVER/api/v1/workloads?state=$1&limit=1000&project=t1" | grep -o '"id":' | wc -l
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rate() { awk -v n="$1" -v ms="$2" 'BEGIN {printf "%.2f", n * 1000 / ms}'; }

: >"$dir/gp" && : >"$dir/bare"
for r in $(seq "$R"); do
    t0=$(now_ms)
    for i in $(seq "$N"); do
        curl -s -o /dev/null -H "Authorization: Bearer $GPUPOOL_TOKEN" \
            -H 'Content-Type: application/json' \
            -d '{"project":"t1","gpu":"1","command":["true"]}' "$GPUPOOL_SERVER/api/v1/workloads"
    done
    t1=$(now_ms)
    until [ "$(count active)" = 0 ]; do sleep 0.1; done
    t2=$(now_ms)
    bad=$(count failed)
    rate=$(rate "$N" $((t2 - t0)))
    echo "round $r, through gpupool: submitted in $((t1 - t0)) ms, all ended after $((t2 - t0)) ms ($bad failed in all): $rate jobs/s"
    echo "$rate" >>"$dir/gp"
    t0=$(now_ms)
    for i in $(seq "$N"); do
        sbatch --parsable --job-name=bench-bare --output=/dev/null --gres=gpu:1 --mem=64 \
            --wrap true >/dev/null
    done
    t1=$(now_ms)
    until [ "$(squeue -h --name=bench-bare | wc -l)" = 0 ]; do sleep 0.1; done
    t2=$(now_ms)
    rate=$(rate "$N" $((t2 - t0)))
    echo "round $r, bare sbatch: submitted in $((t1 - t0)) ms, all ended after $((t2 - t0)) ms: $rate jobs/s"
    echo "$rate" >>"$dir/bare"
done
g=$(median <"$dir/gp")
b=$(median <"$dir/bare")
echo "median jobs/s: through gpupool $g, bare sbatch $b, ratio $(awk -v g="$g" -v b="$b" 'BEGIN {printf "%.2f", (b > 0 ? g / b : 0)}')"
if [ -n "${GP_BENCH_KEEP:-}" ]; then cp "$dir/pool.log" "$GP_BENCH_KEEP"; fi
