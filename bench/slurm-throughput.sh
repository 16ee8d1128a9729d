#!/bin/sh
# bench/slurm-throughput.sh — sustained launches on a real Slurm cluster
# started on this host (tests/slurm/cluster.sh: 4 nodes of 4 GPUs): N
# one-GPU jobs of `true` (or `sleep S`), each round three ways on the same
# cluster, one after the other:
#   own jobs  `gpupool submit --gpu 1 -- true` to a gpupoold with the slurm
#             executor's defaults (each task its own Slurm job);
#   gpu_hold  the same to a second gpupoold with gpu_hold (each task a step
#             of its GPU's holder job, kept between tasks);
#   sbatch    `sbatch --gres=gpu:1 --wrap true`, straight to Slurm;
# each from the first submit to the moment the last has ended (no workload
# active; squeue lists none), asked every half second so that the asking
# takes little of the host. Each way starts on an idle cluster: the next
# waits until Slurm lists no job at all. Per way it prints the rate and the
# host's CPU time per job (all processes, from /proc/stat: on one host the
# cluster, gpupoold and the submitting loop share the same cores), then the
# medians and each gpupool rate's ratio to sbatch's.
# Usage: bench/slurm-throughput.sh [BUILD_DIR]
#        (GP_BENCH_N: jobs per round, default 1000; GP_BENCH_ROUNDS: 3;
#         GP_BENCH_HOLD: the second pool's gpu_hold, default 10s;
#         GP_BENCH_SLEEP: each job sleeps this many seconds instead of
#         running `true`, default 0; GP_BENCH_WAYS: which ways, default
#         "own held bare")
set -u
B=${1:-build}
N=${GP_BENCH_N:-1000}
R=${GP_BENCH_ROUNDS:-3}
HOLD=${GP_BENCH_HOLD:-10s}
S=${GP_BENCH_SLEEP:-0}
WAYS=${GP_BENCH_WAYS:-own held bare}
if [ "$S" = 0 ]; then CMD=true; else CMD="sleep $S"; fi
POOL_NAME=slurm-tput . bench/slurm-pool.sh
OWN_SERVER=$GPUPOOL_SERVER OWN_TOKEN=$GPUPOOL_TOKEN
gp_pool_start held "gpu_hold=$HOLD"
HELD_SERVER=$GPUPOOL_SERVER HELD_TOKEN=$GPUPOOL_TOKEN
for p in OWN HELD; do
    eval "export GPUPOOL_SERVER=\$${p}_SERVER GPUPOOL_TOKEN=\$${p}_TOKEN"
    "$B/gpupool" queue create T --deserved 16 >/dev/null &&
        "$B/gpupool" queue create t1 --parent T --deserved 16 >/dev/null || exit 1
done

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# Busy CPU time of the whole host so far, in clock ticks.
busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
count() {
    curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" \
        "$GPUPOOL_SERVER/api/v1/workloads?state=$1&limit=1000&project=t1" | grep -o '"id":' | wc -l
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rate() { awk -v n="$1" -v ms="$2" 'BEGIN {printf "%.2f", n * 1000 / ms}'; }
cpu_per_job() { awk -v n="$N" -v t="$1" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.3f", t / hz / n}'; }
idle_cluster() { until [ -z "$(squeue -h -o %i)" ]; do sleep 0.2; done; }

# way NAME SUBMIT ENDED [NOTE]: N jobs, each submitted by the command SUBMIT,
# from the first submit until ENDED succeeds; NOTE prints a word about them.
way() {
    idle_cluster
    t0=$(now_ms) c0=$(busy)
    for i in $(seq "$N"); do
        $2 >/dev/null || echo "submit $i failed"
    done
    t1=$(now_ms)
    until $3; do sleep 0.5; done
    t2=$(now_ms) c1=$(busy)
    r=$(rate "$N" $((t2 - t0)))
    echo "round $round, $1: submitted in $((t1 - t0)) ms, all ended after" \
        "$((t2 - t0)) ms${4:+ ($($4))}: $r jobs/s, $(cpu_per_job $((c1 - c0))) CPU-s a job"
    echo "$r" >>"$dir/rate.$1"
}
gp_submit() { "$B/gpupool" submit --project t1 --gpu 1 -- $CMD; }
gp_ended() { [ "$(count active)" = 0 ]; }
gp_failed() { echo "$(count failed) failed in all"; }
bare_submit() {
    sbatch --parsable --job-name=bench-bare --output=/dev/null --gres=gpu:1 --mem=64 --wrap "$CMD"
}
bare_ended() { [ "$(squeue -h --name=bench-bare | wc -l)" = 0 ]; }

: >"$dir/rate.own" && : >"$dir/rate.held" && : >"$dir/rate.bare"
for round in $(seq "$R"); do
    for w in $WAYS; do
        case $w in
        own)
            export GPUPOOL_SERVER=$OWN_SERVER GPUPOOL_TOKEN=$OWN_TOKEN
            way own gp_submit gp_ended gp_failed
            ;;
        held)
            export GPUPOOL_SERVER=$HELD_SERVER GPUPOOL_TOKEN=$HELD_TOKEN
            way held gp_submit gp_ended gp_failed
            ;;
        bare) way bare bare_submit bare_ended ;;
        *) echo "GP_BENCH_WAYS: no way named $w (own, held, bare)" >&2 && exit 2 ;;
        esac
    done
done
o=$(median <"$dir/rate.own")
h=$(median <"$dir/rate.held")
b=$(median <"$dir/rate.bare")
ratio() { awk -v g="$1" -v b="$b" 'BEGIN {printf (g == "" || b == "" ? "-" : "%.2f"), g / (b > 0 ? b : 1)}'; }
echo "median jobs/s: own jobs ${o:--}, gpu_hold=$HOLD ${h:--}, bare sbatch ${b:--};" \
    "ratios to bare sbatch: own jobs $(ratio "$o"), gpu_hold $(ratio "$h")"
if [ -n "${GP_BENCH_KEEP:-}" ]; then cp "$dir/pool.log" "$dir/held.log" "$GP_BENCH_KEEP"; fi
