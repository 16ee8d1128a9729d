#!/bin/sh
# The pool's own history, exported with `gpupool export` as the files
# gpupool-sim reads, replayed by `gpupool-sim plan` into a report.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/export
mkdir -p "$D"
printf 'node = gpu-node-1\ndomain = local\ngpu = H100 80G 4\n' >"$TMP/inv.conf"
tap_ok "gpupoold starts" gpd_start "$D" --period 300ms --poll 200ms \
    --executor-config "state_dir=$D/tasks,inventory=$TMP/inv.conf,interposer=$TMP/none.so,cgroup=off"
$GP queue create research --deserved 4 >/dev/null && $GP queue create nlp --parent research --deserved 2 >/dev/null &&
    $GP queue create vision --parent research --deserved 2 --limit 4 >/dev/null
$GP submit --project nlp --gpu 1 -- sleep 1 >/dev/null
$GP submit --project nlp --gpu 0.5 --cpu 2 --memory 4G -- sleep 1 >/dev/null
$GP submit --project vision --gpu-memory 20G -- sleep 1 >/dev/null
$GP submit --project vision --gpu 2 --gang 2 -- sleep 1 >/dev/null
tap_ok "four workloads finish" wait_until 60 has_count 4 succeeded
$GP submit --project vision --gpu 1 -- sleep 600 >/dev/null
tap_ok "a fifth runs" wait_until 30 has_count 1 running

$GP export workloads >"$TMP/pods.csv"
$GP export nodes >"$TMP/nodes.csv"
$GP export projects >"$TMP/projects.csv"
tap_is "the pod list has the simulator's columns" "$(head -1 "$TMP/pods.csv")" \
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time,project,user,kind,priority,tasks"
tap_is "finished workloads only, one row each" "$(tail -n +2 "$TMP/pods.csv" | wc -l | tr -d ' ')" 4
tap_ok "what they asked for: whole, half, memory as a share of the GPU, a gang" sh -c "
    grep -q '^w1,[0-9]*,[0-9]*,1,1000,' '$TMP/pods.csv' &&
    grep -q '^w2,2000,4096,1,500,' '$TMP/pods.csv' &&
    grep -q '^w3,[0-9]*,[0-9]*,1,250,' '$TMP/pods.csv' &&
    grep -q '^w4,[0-9]*,[0-9]*,2,1000,.*,vision,admin,train,0,2$' '$TMP/pods.csv'"
tap_is "the node list" "$(tail -n +2 "$TMP/nodes.csv" | cut -d, -f1,4,5)" "gpu-node-1,4,H100"
tap_ok "the projects file has the tree and its quotas" sh -c "
    grep -q '^research,,4,1,,0$' '$TMP/projects.csv' && grep -q '^vision,research,2,1,4,0$' '$TMP/projects.csv'"
tap_ok "gpupool-sim plan replays the pool's own history" "$B/gpupool-sim" plan --quiet --price-per-gpu 30000 \
    --nodes "$TMP/nodes.csv" --pods "$TMP/pods.csv" --projects "$TMP/projects.csv" --out "$TMP/plan" \
    >/dev/null
tap_ok "into a report for the finance department" grep -q 'Each project owns a fixed set of GPUs' "$TMP/plan.html"
tap_is "a bad time is refused, naming the field" "$(api GET '/api/v1/export/workloads?from=soon' | grep -o '"field":"from"')" '"field":"from"'
RT=$($GP token create --user rita --role researcher --scope nlp | head -1)
tap_is "researchers may not export the pool" "$(GPUPOOL_TOKEN=$RT api GET /api/v1/export/nodes | grep -o ' 403$')" " 403"
tap_done
