#!/bin/sh
# gpupool shares a real Slurm cluster (4 nodes of 4 GPUs) with users who
# submit with sbatch directly. Direct jobs fill n2 and most of n3 and n4,
# where others come and go all along; gpupool's a100 work lands on n1. A
# direct job then takes 2 of n1's GPUs while gpupool's highest-numbered GPU
# there is bound: gpupool withholds 2 GPUs (the inventory is not refused),
# offers only what Slurm can give, and runs no more than fits. A gang that
# could run once others leave is accepted and waits. A job Slurm has not
# started (its partition down) is STARTING, not running, and its wait is
# in its events and the metrics. All along, sampled every second, no node
# holds more GPUs for gpupool's running work and the others' jobs together
# than its GRES.
. tests/lib/tap.sh
. tests/daemon/lib.sh
. tests/slurm/lib.sh

command -v python3 >/dev/null || { echo "ok 1 # SKIP python3 is not installed"; echo 1..1; exit 0; }
D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts on the slurm executor" sx_start "$D"
$GP queue create S --deserved 16 >/dev/null && $GP queue create s1 --parent S --deserved 16 >/dev/null
tap_is "queues created" "$?" 0

T0=$(date +%s)
python3 tests/slurm/sample-books.py "$TMP/stop" "$TMP/books" "$SX_TAG" 4 &
SAMPLER=$!
direct() { sbatch -p gpu -J direct -o /dev/null "$@" | grep -o '[0-9]*$'; }
running() { [ "$(squeue -h -j "$1" -o %T)" = RUNNING ]; }
# taken NODE N: gpupool's inventory says N of NODE's GPUs are held by others.
taken() { $GP --json node list | jq -e ".nodes[] | select(.name == \"$1\") | .gpus_taken == $2"; }

# The others: n2 full, n3 and n4 three GPUs each, and a user whose one-GPU
# jobs come and go on n3 and n4 (a second each, one after the other).
fill="$(direct -w n2 --gres=gpu:4 --wrap 'sleep 900') $(direct -w n3 --gres=gpu:3 --wrap 'sleep 900')"
fill="$fill $(direct -w n4 --gres=gpu:3 --wrap 'sleep 900')"
all_running() { for j in $fill; do running "$j" || return 1; done; }
tap_ok "the direct jobs run" wait_until 60 all_running
(
    i=0
    while [ ! -e "$TMP/stop" ]; do
        i=$((i + 1))
        sbatch -p gpu -J churn -o /dev/null -w "n$((3 + i % 2))" --gres=gpu:1 --wait --wrap 'sleep 1' >/dev/null 2>&1
    done
) &
CHURN=$!
tap_ok "gpupool sees n2's 4 GPUs held by others" wait_until 30 taken n2 4
tap_is "node list says so" "$($GP node list | grep '^n2 ' | grep -c 'held outside the pool')" 4

# Whether a gang could ever run is judged on the nodes' GPUs, not on what
# others hold now.
out=$(api POST /api/v1/workloads '{"project":"s1","gpu":"4","gang":2,"command":["true"]}')
tap_ok "a gang of two 4-GPU tasks is accepted while every node has others' jobs ($out)" \
    contains "$out" ' 20[01]$'
gang=$(echo "$out" | grep -o '"id": *[0-9]*' | grep -o '[0-9]*$')
gang_waits() { $GP describe "$gang" | grep -qi pending; }
tap_ok "and waits" wait_until 20 gang_waits
gang_waits || { $GP describe "$gang" 2>&1 | tail -15 | sed 's/^/# /'; $GP --json node list |
    jq -c '.nodes[] | [.name, .gpus_taken]' 2>&1 | sed 's/^/# /'; }
$GP delete "$gang" >/dev/null

# gpupool's work on n1 (the only a100 node with room): 4 one-GPU workloads.
for i in 1 2 3 4; do
    $GP submit --project s1 --gpu 1 --model a100 --name w$i -- sleep 900 >/dev/null
done
tap_ok "four one-GPU workloads run on n1" wait_until 60 has_count 4 running s1
# Keep the one on n1's highest-numbered GPU; delete the others.
keep=$($GP --json node list | jq '.nodes[] | select(.name == "n1") | [.gpus[] | .slices[] .workload] | last')
for id in $(seq "$((gang + 1))" "$((gang + 4))"); do
    [ "$id" = "$keep" ] || $GP delete "$id" >/dev/null
done
one_left() { [ "$(sx_jobs RUNNING | wc -l)" = 1 ]; }
tap_ok "three deleted, their Slurm jobs gone" wait_until 60 one_left
tap_is "the one kept holds n1's last GPU" \
    "$($GP --json node list | jq '.nodes[] | select(.name == "n1") | .gpus[3].slices[0].workload')" "$keep"

d1=$(direct -w n1 --gres=gpu:2 --wrap 'sleep 900')
tap_ok "a direct job takes 2 of n1's GPUs" wait_until 60 running "$d1"
tap_ok "gpupool withholds 2 of n1's GPUs while its GPU 3 stays bound" wait_until 30 taken n1 2
tap_ok "and its inventory is not refused" sh -c "! grep -q 'inventory was refused' '$D.log'"

for i in 5 6; do
    $GP submit --project s1 --gpu 1 --model a100 --name w$i -- sleep 900 >/dev/null
done
tap_ok "of two more, one runs (n1 has one GPU left)" wait_until 60 has_count 2 running s1
tap_ok "the other waits in gpupool" wait_until 20 has_count 1 pending s1
tap_is "no gpupool job waits in Slurm" "$(sx_jobs PENDING | wc -l)" 0
tap_is "n1: gpupool holds 2 GPUs, 2 withheld" \
    "$($GP --json node list | jq -c '.nodes[] | select(.name == "n1") | [([.gpus[] | select(.allocated > 0)] | length), ([.gpus[] | select(.taken)] | length)]')" \
    "[2,2]"

# A job that Slurm does not start: STARTING until it runs.
for id in $(api GET "/api/v1/workloads?project=s1&limit=100" | grep -o '"id": *[0-9]*' | grep -o '[0-9]*$'); do
    $GP delete "$id" >/dev/null
done
scancel "$d1"
tap_ok "n1 is free again" wait_until 60 taken n1 0
none_active() { has_count 0 running s1 && has_count 0 stopping s1 && has_count 0 starting s1; }
tap_ok "gpupool's workloads are gone" wait_until 60 none_active
scontrol update PartitionName=gpu State=DOWN
id=$($GP submit --project s1 --gpu 1 --model a100 --name late -- sleep 30 | grep -o '[0-9]*' | head -1)
in_slurm() { sx_jobs PENDING | grep -q "\.w$id\."; }
tap_ok "its job waits in Slurm (partition down)" wait_until 60 in_slurm
tap_ok "gpupool says starting" has_count 1 starting s1
tap_is "not running" "$(count_state running s1)" 0
tap_ok "its events say launched, not started" sh -c \
    "$GP describe $id | grep -q 'launched' && ! $GP describe $id | grep -q 'attempt 1 started'"
scontrol update PartitionName=gpu State=UP
tap_ok "once Slurm starts it, it runs" wait_until 60 has_count 1 running s1
ev=$(api GET "/api/v1/workloads/$id/events")
tap_ok "its events say how long it waited in the executor ($(echo "$ev" | grep -o 'started[^"]*waiting[^"]*'))" \
    contains "$ev" 'attempt 1 started (1 task) after [0-9.]*[0-9]*m*s waiting in the executor'
tap_ok "the metrics count the wait" sh -c "curl -s $GPUPOOL_SERVER/metrics \
    -H 'Authorization: Bearer $GPUPOOL_TOKEN' | grep -q '^gpupool_start_wait_seconds_count [1-9]'"

touch "$TMP/stop"
wait "$CHURN"
wait "$SAMPLER"
# All along: at least one sample for every 4 s the test ran (a sample's
# squeue and sinfo take longer than a second on a loaded machine), and 3 at
# least; a fixed count failed on a quiet machine, where the test is short.
el=$(($(date +%s) - T0))
want=$((el / 4 > 3 ? el / 4 : 3))
tap_ok "the books were sampled all along ($(tail -1 "$TMP/books") in ${el}s)" \
    test "$(sed -n 's/^samples //p' "$TMP/books")" -ge "$want"
tap_is "no node ever held more GPUs for gpupool's running work and others' jobs than its GRES" \
    "$(grep '^over' "$TMP/books" | sort | uniq -c | tr -s ' ' | tr '\n' ';')" ""
for j in $fill; do scancel "$j"; done
tap_done
