#!/bin/sh
# bench/slurm.sh — the slurm executor's figures on a real Slurm cluster
# started on this host (tests/slurm/cluster.sh: 4 nodes of 4 GPUs), with
# gpupoold on the slurm executor (--period 500ms --poll 200ms):
#   1. submit to running: `gpupool submit` of a CPU task, one at a time, to the
#      moment its command runs (it prints the clock); p50 and p99;
#   2. reclaim: B borrows all 16 GPUs with four 4-GPU workloads that take 2 s
#      to checkpoint; A (deserving 8) submits one 4-GPU workload; time from
#      A's submit to A's command running; three rounds;
#   3. sustained launches: N short workloads through gpupool, from the first
#      submit to the last success, against N `sbatch --wrap true` alone on the
#      same cluster in the same run.
# Usage: bench/slurm.sh [BUILD_DIR]   (GP_BENCH_N: launches, default 400)
set -u
B=${1:-build}
N=${GP_BENCH_N:-400}
GP=$B/gpupool
POOL_NAME=slurm-bench . bench/slurm-pool.sh
$GP queue create A --deserved 8 >/dev/null && $GP queue create a1 --parent A --deserved 8 >/dev/null
$GP queue create B --deserved 8 >/dev/null && $GP queue create b1 --parent B --deserved 8 >/dev/null

now_ms() { echo $(($(date +%s%N) / 1000000)); }
count() {
    curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" \
        "$GPUPOOL_SERVER/api/v1/workloads?state=$1&limit=1000${2:+&project=$2}" | grep -o '"id":' | wc -l
}
# started_ms ID: the clock its command printed ("T=<ms>"), once it has.
started_ms() {
    [ -n "$1" ] || { echo "bench/slurm.sh: a submit failed" >&2; exit 1; }
    while :; do
        t=$($GP logs "$1" 2>/dev/null | sed -n 's/^T=//p' | head -1)
        [ -n "$t" ] && { echo "$t"; return; }
        sleep 0.05
    done
}
pct() { sort -n | awk -v p="$1" '{a[NR]=$1} END {i=int((NR*p+99)/100); if (i<1) i=1; print a[i]}'; }

echo "== 1. submit to running (40 CPU tasks, one at a time)"
: >"$dir/lat"
for i in $(seq 40); do
    t0=$(now_ms)
    id=$($GP submit --project a1 --cpu 1 -- sh -c 'echo T=$(($(date +%s%N) / 1000000))' |
        sed -n 's/^workload \([0-9]*\) submitted.*/\1/p')
    t1=$(started_ms "$id")
    echo $((t1 - t0)) >>"$dir/lat"
done
echo "submit-to-running ms: p50 $(pct 50 <"$dir/lat") p99 $(pct 99 <"$dir/lat") max $(pct 100 <"$dir/lat")"

echo "== 2. reclaim (borrower checkpoints in 2 s), 3 rounds"
cat >"$dir/borrow.sh" <<'SH'
trap 'sleep 2; exit 0' TERM
while :; do sleep 1 & wait $!; done
SH
for r in 1 2 3; do
    for i in 1 2 3 4; do
        $GP submit --project b1 --gpu 4 --grace 10s -- sh "$dir/borrow.sh" >/dev/null
    done
    until [ "$(count running b1)" = 4 ]; do sleep 0.2; done
    sleep 2
    t0=$(now_ms)
    id=$($GP submit --project a1 --gpu 4 -- sh -c 'echo T=$(($(date +%s%N) / 1000000)); sleep 1' |
        sed -n 's/^workload \([0-9]*\) submitted.*/\1/p')
    t1=$(started_ms "$id")
    echo "round $r: owner's submit to owner's task running: $((t1 - t0)) ms"
    for w in $($GP --json list | grep -o '"id": *[0-9]*' | grep -o '[0-9]*$'); do
        $GP delete "$w" >/dev/null 2>&1
    done
    until [ "$(count active)" = 0 ]; do sleep 0.2; done
done

echo "== 3. sustained launches: $N short tasks"
t0=$(now_ms)
for i in $(seq "$N"); do
    curl -s -o /dev/null -H "Authorization: Bearer $GPUPOOL_TOKEN" -H 'Content-Type: application/json' \
        -d '{"project":"a1","cpu":"1","command":["true"]}' "$GPUPOOL_SERVER/api/v1/workloads"
done
t1=$(now_ms)
until [ "$(count active a1)" = 0 ]; do sleep 0.2; done
t2=$(now_ms)
echo "through gpupool: submitted in $((t1 - t0)) ms, all succeeded after $((t2 - t0)) ms: $((N * 1000 / (t2 - t0))) launches/s"
t0=$(now_ms)
for i in $(seq "$N"); do
    sbatch --parsable --job-name=bench-direct --output=/dev/null --mem=16 --wrap true >/dev/null
done
t1=$(now_ms)
until [ "$(squeue -h --name=bench-direct | wc -l)" = 0 ]; do sleep 0.2; done
t2=$(now_ms)
echo "sbatch alone: submitted in $((t1 - t0)) ms, all ended after $((t2 - t0)) ms: $((N * 1000 / (t2 - t0))) launches/s"
